ALTER TABLE `enrollments` ADD `pay_cycle_alternative_frequency` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_alternative_next_payday` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `pay_cycle_lands_early` integer;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `time_zone` text;
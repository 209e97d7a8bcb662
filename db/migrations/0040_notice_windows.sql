ALTER TABLE `enrollments` ADD `reauthorized_at` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `reauthorization` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `reg_e_election` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_class` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_needs` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_channel` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_due_from` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_due_by` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_sent_at` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_sent_channel` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `notice_evidence_ref` text;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `notice_channel` text;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `reg_e_election` text;--> statement-breakpoint
-- The lenders there were before payment notices bound the debit engine keep debiting as they did: their policy
-- says no notice channel (a lender created from now on gets electronic until it says otherwise).
INSERT INTO `collection_policies` (`lender_id`) SELECT `id` FROM `lenders` WHERE `id` NOT IN (SELECT `lender_id` FROM `collection_policies`);

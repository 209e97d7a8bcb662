ALTER TABLE `payments` ADD `reported_status` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `reported_return_code` text;--> statement-breakpoint
ALTER TABLE `payments` ADD `reported_at` integer;--> statement-breakpoint
ALTER TABLE `payments` ADD `report_hold` text;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `late_return_window_days` integer DEFAULT 5 NOT NULL;
ALTER TABLE `bank_link_relinks` ADD `health` text DEFAULT 'relink_required' NOT NULL;--> statement-breakpoint
ALTER TABLE `bank_link_relinks` ADD `since` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `bank_link_relinks` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `bank_link_relinks` ADD `next_probe_at` integer;--> statement-breakpoint
ALTER TABLE `bank_link_relinks` ADD `probe_interval_ms` integer;--> statement-breakpoint
ALTER TABLE `bank_link_relinks` ADD `link_sealed` text;--> statement-breakpoint
CREATE INDEX `bank_link_relinks_probe_idx` ON `bank_link_relinks` (`next_probe_at`);--> statement-breakpoint
UPDATE `bank_link_relinks` SET `since` = `created_at`;
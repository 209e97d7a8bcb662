ALTER TABLE `enrollments` ADD `revoked_at` integer;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `revocation_channel` text;--> statement-breakpoint
ALTER TABLE `enrollments` ADD `revocation_ref` text;
DROP INDEX `sandbox_payments_account_idem_uq`;--> statement-breakpoint
CREATE INDEX `sandbox_payments_account_idem_idx` ON `sandbox_payments` (`account`,`idempotency_key`,`created_at`);--> statement-breakpoint
CREATE INDEX `sandbox_payments_account_created_idx` ON `sandbox_payments` (`account`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `payment_connections` ADD `account_id` text;--> statement-breakpoint
ALTER TABLE `payment_connections` ADD `reconciled_at` integer;--> statement-breakpoint
ALTER TABLE `payment_connections` ADD `reconcile_due` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `payment_connections_account_idx` ON `payment_connections` (`processor`,`account_id`);--> statement-breakpoint
ALTER TABLE `payments` ADD `first_attempt_at` integer;--> statement-breakpoint
CREATE INDEX `sandbox_events_payment_idx` ON `sandbox_events` (`payment_id`,`seq`);--> statement-breakpoint
-- Payments stored before the first attempt was recorded may have reached the processor: they are resolved there, never assumed unsent.
UPDATE `payments` SET `first_attempt_at` = `created_at`;
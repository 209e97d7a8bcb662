DROP INDEX `payments_in_flight_uq`;--> statement-breakpoint
ALTER TABLE `payments` ADD `debit_on` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `payments_in_flight_uq` ON `payments` (`enrollment_id`) WHERE "payments"."status" IN ('scheduled', 'initiating', 'processing');--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `notice_days` integer DEFAULT 0 NOT NULL;
CREATE INDEX `payment_events_returns_idx` ON `payment_events` (`lender_id`,`occurred_at`,`reference`,`return_code`,`payment_id`) WHERE "payment_events"."status" IN ('returned', 'late_returned');--> statement-breakpoint
CREATE INDEX `payment_events_reference_returns_idx` ON `payment_events` (`lender_id`,`reference`,`occurred_at`) WHERE "payment_events"."status" IN ('returned', 'late_returned');--> statement-breakpoint
CREATE INDEX `payments_rates_idx` ON `payments` (`lender_id`,`rail`,`first_attempt_at`,`status`);--> statement-breakpoint
CREATE INDEX `uploaded_results_submitted_idx` ON `uploaded_results` (`lender_id`,`submitted_at`);--> statement-breakpoint
CREATE INDEX `uploaded_results_returned_idx` ON `uploaded_results` (`lender_id`,`returned_at`);
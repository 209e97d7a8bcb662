CREATE INDEX `enrollments_lender_state_idx` ON `enrollments` (`lender_id`,`state`,`authorizer_unique_id`);--> statement-breakpoint
CREATE INDEX `ledger_entries_lender_at_idx` ON `ledger_entries` (`lender_id`,`at`,`kind`,`amount_cents`);--> statement-breakpoint
CREATE INDEX `payments_lender_status_idx` ON `payments` (`lender_id`,`status`,`created_at`,`amount_cents`);
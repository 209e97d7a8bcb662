ALTER TABLE `collection_policies` ADD `allow_current_balance` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `current_balance_buffer_cents` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `collection_policies` ADD `max_balance_age_minutes` integer DEFAULT 60 NOT NULL;
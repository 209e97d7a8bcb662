CREATE TABLE `processor_accounts` (
	`processor` text NOT NULL,
	`account_id` text NOT NULL,
	`lender_id` text NOT NULL,
	`bound_at` integer NOT NULL,
	PRIMARY KEY(`processor`, `account_id`),
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `payment_observations_set_aside` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`lender_id` text NOT NULL,
	`connection_id` text,
	`source` text NOT NULL,
	`source_event_id` text NOT NULL,
	`reference` text NOT NULL,
	`status` text NOT NULL,
	`error` text NOT NULL,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `payment_observations_set_aside_lender_idx` ON `payment_observations_set_aside` (`lender_id`,`at`);--> statement-breakpoint
-- Every processor account already known is bound to the lender that registered it first.
INSERT OR IGNORE INTO `processor_accounts` (`processor`, `account_id`, `lender_id`, `bound_at`)
  SELECT `processor`, `account_id`, `lender_id`, `created_at` FROM `payment_connections`
   WHERE `account_id` IS NOT NULL ORDER BY `created_at`, `id`;
--> statement-breakpoint
-- A payment an older status wrote back (a stale processing read after its outcome) takes the furthest status
-- its events show, by the one order of statuses: final outcomes and late returns ahead of settled, settled
-- ahead of processing. This frees the borrower, whom the payment held as in flight.
UPDATE `payments` SET
  `status` = (SELECT e.`status` FROM `payment_events` e WHERE e.`payment_id` = `payments`.`id`
               ORDER BY CASE e.`status` WHEN 'processing' THEN 2 WHEN 'settled' THEN 3 WHEN 'late_returned' THEN 5 WHEN 'refunded' THEN 5 ELSE 4 END DESC,
                        e.`recorded_at` DESC, e.`rowid` DESC LIMIT 1),
  `return_code` = (SELECT e.`return_code` FROM `payment_events` e WHERE e.`payment_id` = `payments`.`id`
               ORDER BY CASE e.`status` WHEN 'processing' THEN 2 WHEN 'settled' THEN 3 WHEN 'late_returned' THEN 5 WHEN 'refunded' THEN 5 ELSE 4 END DESC,
                        e.`recorded_at` DESC, e.`rowid` DESC LIMIT 1),
  `settled_at` = COALESCE(`settled_at`, (SELECT MIN(e.`occurred_at`) FROM `payment_events` e WHERE e.`payment_id` = `payments`.`id` AND e.`status` = 'settled'))
WHERE `status` IN ('initiating', 'processing')
  AND EXISTS (SELECT 1 FROM `payment_events` e WHERE e.`payment_id` = `payments`.`id` AND e.`status` != 'processing');
--> statement-breakpoint
-- A key whose feed stopped on such a payment missed what came after it: every live key is reconciled once.
UPDATE `payment_connections` SET `reconcile_due` = 1 WHERE `deleted_at` IS NULL AND `key_sealed` IS NOT NULL;

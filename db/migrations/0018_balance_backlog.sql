CREATE TABLE `balance_backlog` (
	`lender_id` text PRIMARY KEY NOT NULL,
	`pending` integer NOT NULL
);
--> statement-breakpoint
DROP INDEX `batches_open_idx`;--> statement-breakpoint
INSERT INTO `balance_backlog` (`lender_id`, `pending`)
  SELECT `lender_id`, SUM(`total_authorizers` - `total_processed`) FROM `batches`
   WHERE `status` IN ('pending', 'processing') GROUP BY `lender_id`;
--> statement-breakpoint
CREATE TRIGGER `balance_backlog_batch_insert` AFTER INSERT ON `batches`
  WHEN NEW.`status` IN ('pending', 'processing')
BEGIN
  INSERT INTO `balance_backlog` (`lender_id`, `pending`) VALUES (NEW.`lender_id`, NEW.`total_authorizers` - NEW.`total_processed`)
    ON CONFLICT (`lender_id`) DO UPDATE SET `pending` = `pending` + excluded.`pending`;
END;
--> statement-breakpoint
CREATE TRIGGER `balance_backlog_batch_update` AFTER UPDATE OF `lender_id`, `status`, `total_authorizers`, `total_processed` ON `batches`
BEGIN
  UPDATE `balance_backlog` SET `pending` = `pending` - (OLD.`total_authorizers` - OLD.`total_processed`)
   WHERE `lender_id` = OLD.`lender_id` AND OLD.`status` IN ('pending', 'processing');
  INSERT INTO `balance_backlog` (`lender_id`, `pending`)
    SELECT NEW.`lender_id`, NEW.`total_authorizers` - NEW.`total_processed` WHERE NEW.`status` IN ('pending', 'processing')
    ON CONFLICT (`lender_id`) DO UPDATE SET `pending` = `pending` + excluded.`pending`;
END;
--> statement-breakpoint
CREATE TRIGGER `balance_backlog_batch_delete` AFTER DELETE ON `batches`
  WHEN OLD.`status` IN ('pending', 'processing')
BEGIN
  UPDATE `balance_backlog` SET `pending` = `pending` - (OLD.`total_authorizers` - OLD.`total_processed`) WHERE `lender_id` = OLD.`lender_id`;
END;

CREATE TABLE `fraud_account_switches` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`enrollment_id` text NOT NULL,
	`bank_account_id` text,
	`switched_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `fraud_account_switches_enrollment_idx` ON `fraud_account_switches` (`enrollment_id`,`switched_at`);--> statement-breakpoint
CREATE TABLE `fraud_alert_dispositions` (
	`id` text PRIMARY KEY NOT NULL,
	`alert_id` text NOT NULL,
	`lender_id` text NOT NULL,
	`disposition` text NOT NULL,
	`note` text,
	`disposed_by` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`alert_id`) REFERENCES `fraud_alerts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `fraud_alert_dispositions_alert_idx` ON `fraud_alert_dispositions` (`alert_id`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `fraud_alert_dispositions_final_uq` ON `fraud_alert_dispositions` (`alert_id`) WHERE "fraud_alert_dispositions"."disposition" <> 'needs_info';--> statement-breakpoint
CREATE TABLE `fraud_alerts` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`rule` text NOT NULL,
	`rule_version` integer NOT NULL,
	`policy_version` integer NOT NULL,
	`action` text NOT NULL,
	`subject` text NOT NULL,
	`fact` text NOT NULL,
	`enrollment_id` text,
	`authorizer_unique_id` text,
	`bank_account_id` text,
	`payment_id` text,
	`details` text NOT NULL,
	`state` text NOT NULL,
	`disposed_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fraud_alerts_fact_uq` ON `fraud_alerts` (`lender_id`,`rule`,`subject`,`fact`);--> statement-breakpoint
CREATE INDEX `fraud_alerts_lender_idx` ON `fraud_alerts` (`lender_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `fraud_alerts_hold_idx` ON `fraud_alerts` (`enrollment_id`) WHERE "fraud_alerts"."action" = 'hold' AND "fraud_alerts"."state" IN ('open', 'needs_info');--> statement-breakpoint
CREATE INDEX `fraud_alerts_enrollment_idx` ON `fraud_alerts` (`enrollment_id`,`rule`);--> statement-breakpoint
CREATE INDEX `fraud_alerts_account_idx` ON `fraud_alerts` (`bank_account_id`,`rule`);--> statement-breakpoint
CREATE TABLE `fraud_policies` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`version` integer NOT NULL,
	`rules` text NOT NULL,
	`notes` text,
	`changed_by` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fraud_policies_version_uq` ON `fraud_policies` (`lender_id`,`version`);--> statement-breakpoint
CREATE TABLE `fraud_reviews` (
	`id` text PRIMARY KEY NOT NULL,
	`lender_id` text NOT NULL,
	`reviewed_on` text NOT NULL,
	`reviewer` text NOT NULL,
	`notes` text,
	`policy_version` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`lender_id`) REFERENCES `lenders`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `fraud_reviews_lender_idx` ON `fraud_reviews` (`lender_id`,`reviewed_on`,`id`);--> statement-breakpoint
ALTER TABLE `bank_data_connections` ADD `identity` integer DEFAULT false NOT NULL;
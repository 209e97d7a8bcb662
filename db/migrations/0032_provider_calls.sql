CREATE TABLE `provider_calls` (
	`connection_id` text NOT NULL,
	`endpoint` text NOT NULL,
	`day` text NOT NULL,
	`lender_id` text NOT NULL,
	`provider` text NOT NULL,
	`calls` integer NOT NULL,
	PRIMARY KEY(`connection_id`, `endpoint`, `day`)
);

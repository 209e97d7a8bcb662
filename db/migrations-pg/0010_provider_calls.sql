CREATE TABLE "provider_calls" (
	"connection_id" text COLLATE "C" NOT NULL,
	"endpoint" text COLLATE "C" NOT NULL,
	"day" text COLLATE "C" NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"provider" text NOT NULL,
	"calls" bigint NOT NULL,
	CONSTRAINT "provider_calls_connection_id_endpoint_day_pk" PRIMARY KEY("connection_id","endpoint","day")
);

CREATE TABLE "unfinished_uploads" (
	"id" text COLLATE "C" PRIMARY KEY NOT NULL,
	"lender_id" text COLLATE "C" NOT NULL,
	"creator" text,
	"file_sealed" text NOT NULL,
	"checked_at" bigint NOT NULL,
	"done" integer NOT NULL,
	"matched" integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE "unfinished_uploads" ADD CONSTRAINT "unfinished_uploads_lender_id_lenders_id_fk" FOREIGN KEY ("lender_id") REFERENCES "public"."lenders"("id") ON DELETE no action ON UPDATE no action;
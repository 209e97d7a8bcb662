-- balance_backlog kept by triggers on batches, as the SQLite migration 0018_balance_backlog does: every insert,
-- update and delete of a batch, whatever code makes it, moves the lender's sum of (total_authorizers -
-- total_processed) over its pending and processing batches in the same transaction. Each trigger has the
-- SQLite trigger's name, event and condition, and its function runs the SQLite trigger's statements.
INSERT INTO "balance_backlog" ("lender_id", "pending")
  SELECT "lender_id", SUM("total_authorizers" - "total_processed") FROM "batches"
   WHERE "status" IN ('pending', 'processing') GROUP BY "lender_id"
  ON CONFLICT ("lender_id") DO UPDATE SET "pending" = excluded."pending";
--> statement-breakpoint
CREATE FUNCTION "balance_backlog_batch_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "balance_backlog" ("lender_id", "pending") VALUES (NEW."lender_id", NEW."total_authorizers" - NEW."total_processed")
    ON CONFLICT ("lender_id") DO UPDATE SET "pending" = "balance_backlog"."pending" + excluded."pending";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "balance_backlog_batch_insert" AFTER INSERT ON "batches"
  FOR EACH ROW WHEN (NEW."status" IN ('pending', 'processing'))
  EXECUTE FUNCTION "balance_backlog_batch_insert"();
--> statement-breakpoint
CREATE FUNCTION "balance_backlog_batch_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "balance_backlog" SET "pending" = "balance_backlog"."pending" - (OLD."total_authorizers" - OLD."total_processed")
   WHERE "lender_id" = OLD."lender_id" AND OLD."status" IN ('pending', 'processing');
  INSERT INTO "balance_backlog" ("lender_id", "pending")
    SELECT NEW."lender_id", NEW."total_authorizers" - NEW."total_processed" WHERE NEW."status" IN ('pending', 'processing')
    ON CONFLICT ("lender_id") DO UPDATE SET "pending" = "balance_backlog"."pending" + excluded."pending";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "balance_backlog_batch_update" AFTER UPDATE OF "lender_id", "status", "total_authorizers", "total_processed" ON "batches"
  FOR EACH ROW
  EXECUTE FUNCTION "balance_backlog_batch_update"();
--> statement-breakpoint
CREATE FUNCTION "balance_backlog_batch_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "balance_backlog" SET "pending" = "balance_backlog"."pending" - (OLD."total_authorizers" - OLD."total_processed") WHERE "lender_id" = OLD."lender_id";
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "balance_backlog_batch_delete" AFTER DELETE ON "batches"
  FOR EACH ROW WHEN (OLD."status" IN ('pending', 'processing'))
  EXECUTE FUNCTION "balance_backlog_batch_delete"();

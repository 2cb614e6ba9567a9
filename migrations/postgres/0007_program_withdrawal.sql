-- 0007_program_withdrawal (PostgreSQL): withdrawn incentive program
-- revisions (issue 12 item 3).
--
-- The SQLite twin is migrations/sqlite/0007_program_withdrawal.sql; see it
-- for the meaning of the column.
alter table incentive_programs add column withdrawn_at timestamptz;

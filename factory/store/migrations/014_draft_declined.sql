-- The composer may decline a subgraph on which no honest question can be written (the
-- passages do not really connect, the answer is famous or of the wrong kind, the values
-- mean nothing together). Such a draft has no question; its reason is kept here, and the
-- schema check turns it into a verdict (no_honest_question) that makes the loop reselect.
ALTER TABLE drafts ADD COLUMN declined VARCHAR;

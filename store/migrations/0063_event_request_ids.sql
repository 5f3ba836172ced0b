-- Events name the request that caused them: the X-Request-Id of the API call whose transaction
-- wrote the event ('' for events a reconciler writes on its own, and for older rows). Empty by
-- default so that replicas of the previous version, which do not write it, keep working.
ALTER TABLE event_inbox ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN request_id TEXT NOT NULL DEFAULT '';

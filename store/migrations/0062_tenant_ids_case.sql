-- Tenant ids are compared as given (the seed allows upper and lower case), but two tenants whose
-- ids differ only in case ("tb" and "TB") would read as one to people and to case-insensitive
-- tools (DNS labels, file systems, logs searched without case): refuse the second.
CREATE UNIQUE INDEX tenants_id_fold ON tenants (lower(id));

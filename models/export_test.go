package models

// MigrateWith runs the migrations of a folder of one dialect's files on a database, with a lock timeout
// of its own: tests show the machinery on migrations that only they have.
var MigrateWith = migrateUp

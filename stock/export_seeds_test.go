package stock

// RoomKey is the Redis key of the item's room hash, for the tests that look into it (or write it as
// someone with Redis's access could).
func RoomKey(itemID int64) string { return roomKeysOf(itemID).Room }

package stock

import (
	"strconv"
	"sync"
)

// Where an item's stock shards lie on a Redis Cluster. A cluster gives each master a contiguous range of
// the 16,384 hash slots; shards whose tags hash at random could all land on one master (one chance in
// 27 for four shards on three masters), and the item would be bound to one Redis core after all. So
// shard i's tag is chosen to hash into a window at i golden-ratio turns around the slot ring from shard
// 0's: any two shards are far apart, and n shards are spread evenly over the ring for every n.

const (
	clusterSlots = 16384
	slotWindow   = clusterSlots / 16 // how close to its place a shard's slot must be: about 16 tries
	goldenTurn   = 0.6180339887498949
)

var shardTags sync.Map // [2]int64{item, shard} → tag

// shardTag is the hash tag of shard i of item id: "item:ID" for shard 0 (an item that is not split keeps
// its plain tag), "item:ID:i:j" for the others, with the first j that puts the shard in its window.
func shardTag(id int64, i int) string {
	base := "item:" + strconv.FormatInt(id, 10)
	if i == 0 {
		return base
	}
	key := [2]int64{id, int64(i)}
	if t, ok := shardTags.Load(key); ok {
		return t.(string)
	}
	frac := float64(i) * goldenTurn
	frac -= float64(int(frac))
	target := (Slot(base) + int(frac*clusterSlots)) % clusterSlots
	prefix := base + ":" + strconv.Itoa(i) + ":"
	var tag string
	for j := 0; ; j++ {
		tag = prefix + strconv.Itoa(j)
		if (Slot(tag)-target+clusterSlots)%clusterSlots < slotWindow {
			break
		}
	}
	shardTags.Store(key, tag)
	return tag
}

// Slot is the Redis Cluster hash slot of a key or hash tag's content: CRC16 (XMODEM) modulo 16,384.
func Slot(s string) int {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % clusterSlots
}

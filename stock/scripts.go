package stock

import "seckill/errs"

// The Lua scripts' answers, named once: every comparison in Go uses these. A refusal that the contract
// names (sold_out, ended, already_bought, invalid_path, not_started) is answered by its errs code and
// turned into the contract's error by reason.
const (
	// path.lua and take.lua
	answerOK       = "ok"        // a path was written
	answerEmpty    = "empty"     // the buyer's shard is out of stock, but the item has others: borrow
	answerNotFound = "not_found" // the sale is not loaded in Redis (not on sale, not preheated, or lost)
	// ResultQueued (take.lua's "queued") is shared with the buyer's result.

	// preheat.lua
	// ("loaded": the shard was written from the database.)
	answerKept    = "kept"    // the shard was loaded already and kept its count
	answerMissing = "missing" // a refresh found the shard not loaded

	// queue.lua (draw.lua answers the room's state: RoomDrawing, RoomDrawn, or answerNoRoom)
	answerJoined        = "joined"
	answerNoRoom        = "no_room"
	answerAlreadyBought = errs.AlreadyBought
)

// A turn's end as status.lua answers it (Place.Done): "" while it runs or the shopper waits.
const (
	TurnBought = "bought"
	TurnMissed = "missed"
)

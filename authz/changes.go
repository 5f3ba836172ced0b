package authz

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	openfgav1 "github.com/openfga/api/proto/openfga/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Timing of the change feed. A read every changePoll keeps the last confirmation younger than
// DecisionTTL with room for a slow read; a read that fails leaves answers to DecisionTTL.
const (
	changePoll = 400 * time.Millisecond
	// changeLookback is how far back each read starts. Every read asks again for the changes of
	// the last changeLookback (those already applied are recognised and skipped), so a write
	// that committed after a later one (its timestamp is taken before it commits) is still seen,
	// which a continuation token would skip.
	changeLookback = 5 * time.Second
	// changeIdle stops the feed when no check has used the cache for that long; the next check
	// starts it again (and starts the cache over: changes went unread meanwhile).
	changeIdle = time.Minute
	// changePageSize and changeMaxPages bound one read; a window holding more changes forgets
	// every answer instead of reading on.
	changePageSize = 100
	changeMaxPages = 10
)

// changeFeed reads the engine's tuple changes (OpenFGA ReadChanges) once per changePoll for the
// whole replica and forgets the cached answers of the principals they name.
type changeFeed struct {
	c *client

	mu       sync.Mutex
	running  bool
	lastUse  time.Time
	lastRead time.Time // when the last successful read began (or the feed started)
	// seen holds the changes already applied, by key, with their timestamps, for as long as a
	// read may return them again.
	seen map[string]time.Time
	// reads counts successful reads (tests).
	reads int
}

// touch notes that a check used the cache and starts the feed if it is not running.
func (f *changeFeed) touch() {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastUse = now
	if f.running || f.c.closed.Load() {
		return
	}
	f.running = true
	// Changes went unread while the feed was stopped: start over from now. Answers stored from
	// here on are younger than the first read's window.
	f.c.cache.invalidate()
	f.seen = nil
	f.lastRead = now
	go f.run()
}

func (f *changeFeed) run() {
	t := time.NewTicker(changePoll)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), changePoll*2)
		// A failed read leaves the last confirmation to age: answers fall back to DecisionTTL
		// until a read succeeds.
		_ = f.read(ctx)
		cancel()
		<-t.C
		f.mu.Lock()
		if f.c.closed.Load() || time.Since(f.lastUse) > changeIdle {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
	}
}

// read asks the engine for the changes of the last changeLookback and applies the new ones.
func (f *changeFeed) read(ctx context.Context) error {
	readAt := time.Now()
	since := readAt.Add(-changeLookback)
	f.mu.Lock()
	// After a gap longer than the window the changes in between are unknown: start over.
	all := readAt.Sub(f.lastRead) > changeLookback/2
	seen := f.seen
	f.mu.Unlock()
	if seen == nil || all {
		seen = map[string]time.Time{}
	}
	principals := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		if page == changeMaxPages {
			all = true
			break
		}
		req := &openfgav1.ReadChangesRequest{StoreId: f.c.boot.storeID, PageSize: wrapperspb.Int32(changePageSize)}
		if token == "" {
			req.StartTime = timestamppb.New(since)
		} else {
			req.ContinuationToken = token
		}
		resp, err := f.c.eng.ReadChanges(ctx, req)
		if err != nil {
			return fmt.Errorf("authz: read changes: %w", err)
		}
		for _, ch := range resp.GetChanges() {
			key := changeKey(ch)
			if _, dup := seen[key]; dup {
				continue
			}
			seen[key] = ch.GetTimestamp().AsTime()
			if p, ok := changedPrincipal(ch); ok {
				principals[p] = true
			} else {
				all = true
			}
		}
		next := resp.GetContinuationToken()
		if len(resp.GetChanges()) < changePageSize || next == "" || next == token {
			break
		}
		token = next
	}
	// A change older than the window is never returned again.
	for k, at := range seen {
		if at.Before(since.Add(-time.Second)) {
			delete(seen, k)
		}
	}
	f.c.cache.applyChanges(readAt, principals, all)
	f.mu.Lock()
	f.seen = seen
	f.lastRead = readAt
	f.reads++
	f.mu.Unlock()
	return nil
}

// changeKey names one change (a tuple written and deleted twice is four changes).
func changeKey(ch *openfgav1.TupleChange) string {
	k := ch.GetTupleKey()
	return fmt.Sprintf("%d %s %s %s %s", ch.GetTimestamp().AsTime().UnixNano(), ch.GetOperation(), k.GetObject(), k.GetRelation(), k.GetUser())
}

// changedPrincipal names the principal whose answers a change can alter. Every stored tuple
// grants a role to one principal ("user:<id>", model.fga), and an answer about one principal
// rests on that principal's tuples alone (the tenant is contextual), so only that principal's
// answers are forgotten; a tuple of any other shape forgets everything.
func changedPrincipal(ch *openfgav1.TupleChange) (string, bool) {
	enc, ok := strings.CutPrefix(ch.GetTupleKey().GetUser(), principalType+":")
	if !ok || strings.ContainsAny(enc, "#*") {
		return "", false
	}
	p, err := DecodeEngineID(enc)
	if err != nil {
		return "", false
	}
	return p, true
}

package authapi

import (
	"slices"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Bounds of the recent audit events kept for the admin page.
const (
	recentUsers   = 10000
	recentPerUser = 20
)

// auditRecord is one audit event as the admin page lists it: never the
// client address or anything secret.
type auditRecord struct {
	Time    time.Time `json:"time"`
	Action  string    `json:"action"`
	Auth    string    `json:"auth"`
	Admin   string    `json:"admin,omitempty"`
	Outcome string    `json:"outcome"`
	Status  int       `json:"status"`
}

// recentEvents keeps the last audit events this replica wrote for each
// account, newest first; the audit stream holds every replica's.
type recentEvents struct {
	mu    sync.Mutex
	users *lru.Cache[string, []auditRecord]
}

func newRecentEvents() *recentEvents {
	c, _ := lru.New[string, []auditRecord](recentUsers) // size is positive
	return &recentEvents{users: c}
}

func (e *recentEvents) add(user string, rec auditRecord) {
	if user == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old, _ := e.users.Get(user)
	e.users.Add(user, append([]auditRecord{rec}, old[:min(len(old), recentPerUser-1)]...))
}

func (e *recentEvents) of(user string) []auditRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	recs, _ := e.users.Get(user)
	return slices.Clone(recs)
}

// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// OutcomeHeader tells a client whose write failed whether it may have been
// applied: "not-applied" (it was never in the leader's log, or was refused
// before raft saw it) or "unknown" (it reached the log and may yet commit).
const OutcomeHeader = "X-Tkv-Outcome"

// IndexHeader carries the raft index a write was committed at, or the
// FSM's applied index a read was served at.
const IndexHeader = "X-Tkv-Index"

// ServeHTTP is the API:
//
//	PUT    /key/{k}   set k to the request body          204
//	GET    /key/{k}   k's value                          200, 404 when absent
//	DELETE /key/{k}   remove k                           204
//	POST   /join      {"id","raft_addr","http_addr"}     200 (leader only)
//	POST   /snapshot  take a raft snapshot now           200
//	GET    /status    this node's raft and FSM state     200
//
// {k} is the rest of the path, percent-decoded (so any byte may be sent).
// Writes and linearizable reads on a follower are answered with 307 and
// the leader's address, or 503 when no leader is known.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(path, "/key/"):
		n.serveKey(w, r, path[len("/key/"):])
	case path == "/status":
		if !allow(w, r, http.MethodGet) {
			return
		}
		writeJSON(w, http.StatusOK, n.Status())
	case path == "/join":
		if allow(w, r, http.MethodPost) {
			n.serveJoin(w, r)
		}
	case path == "/snapshot":
		if !allow(w, r, http.MethodPost) {
			return
		}
		f := n.raft.Snapshot()
		if err := f.Error(); err != nil {
			httpError(w, http.StatusServiceUnavailable, "snapshot: %v", err)
			return
		}
		meta, _, err := f.Open()
		if err != nil {
			httpError(w, http.StatusInternalServerError, "snapshot: %v", err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"index": meta.Index, "term": meta.Term, "size": meta.Size})
	default:
		httpError(w, http.StatusNotFound, "no such endpoint %q", path)
	}
}

func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	httpError(w, http.StatusMethodNotAllowed, "method %s not allowed", r.Method)
	return false
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func (n *Node) serveKey(w http.ResponseWriter, r *http.Request, escaped string) {
	if !allow(w, r, http.MethodGet, http.MethodPut, http.MethodDelete) {
		return
	}
	k, err := url.PathUnescape(escaped)
	switch {
	case err != nil:
		httpError(w, http.StatusBadRequest, "bad key: %v", err)
		return
	case k == "":
		httpError(w, http.StatusBadRequest, "empty key")
		return
	case len(k) > n.cfg.MaxKey:
		httpError(w, http.StatusBadRequest, "key of %d bytes: the limit is %d", len(k), n.cfg.MaxKey)
		return
	}
	key := []byte(k)
	switch r.Method {
	case http.MethodGet:
		n.serveGet(w, r, key)
	case http.MethodPut:
		if r.ContentLength > n.cfg.MaxBody {
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestEntityTooLarge, "body of %d bytes: the limit is %d", r.ContentLength, n.cfg.MaxBody)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, n.cfg.MaxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				httpError(w, http.StatusRequestEntityTooLarge, "body over the limit of %d bytes", n.cfg.MaxBody)
			} else {
				httpError(w, http.StatusBadRequest, "reading the body: %v", err)
			}
			return
		}
		n.write(w, r, encodeCommand(opPut, key, body))
	case http.MethodDelete:
		n.write(w, r, encodeCommand(opDelete, key, nil))
	}
}

// notLeader answers a request that only the leader can serve.
func (n *Node) notLeader(w http.ResponseWriter, r *http.Request) {
	_, lid := n.raft.LeaderWithID()
	addr := ""
	if lid != "" && string(lid) != n.cfg.ID {
		addr = n.fsm.Member(string(lid))
	}
	if addr == "" {
		w.Header().Set("Retry-After", "1")
		w.Header().Set(OutcomeHeader, "not-applied")
		httpError(w, http.StatusServiceUnavailable, "not the leader, and no leader is known")
		return
	}
	w.Header().Set("Location", n.scheme+"://"+addr+r.URL.RequestURI())
	w.Header().Set(OutcomeHeader, "not-applied")
	httpError(w, http.StatusTemporaryRedirect, "not the leader: the leader is %s at %s", lid, addr)
}

// write proposes a command and answers once it is applied on this node.
func (n *Node) write(w http.ResponseWriter, r *http.Request, cmd []byte) {
	if n.raft.State() != raft.Leader {
		n.notLeader(w, r)
		return
	}
	f := n.raft.Apply(cmd, n.cfg.ApplyTimeout)
	err := f.Error()
	if err == nil {
		if e, ok := f.Response().(error); ok {
			err = e
		}
	}
	if err != nil {
		n.writeFailed(w, r, err)
		return
	}
	w.Header().Set(IndexHeader, strconv.FormatUint(f.Index(), 10))
	w.WriteHeader(http.StatusNoContent)
}

// IsNoSpace reports whether err is a full disk: tierkv's TKV_NO_SPACE or
// ENOSPC from a file system call (raft-wal, raft's snapshot files).
func IsNoSpace(err error) bool {
	return errors.Is(err, tierkv.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

func (n *Node) writeFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Refused before it was appended.
		n.notLeader(w, r)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		w.Header().Set(OutcomeHeader, "not-applied")
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "write not accepted: %v", err)
	case IsNoSpace(err):
		// The leader's log store is full (the entry was not appended) or
		// the FSM could not apply a committed entry (it stops; see
		// /status). Either way the caller must not assume either outcome.
		w.Header().Set(OutcomeHeader, "unknown")
		httpError(w, http.StatusInsufficientStorage, "no space left on the device: %v", err)
	default:
		// Leadership lost after the entry was appended, and the rest:
		// the entry may still commit.
		w.Header().Set(OutcomeHeader, "unknown")
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "write outcome unknown: %v", err)
	}
}

func (n *Node) serveGet(w http.ResponseWriter, r *http.Request, key []byte) {
	stale := n.cfg.StaleReads
	if s := r.URL.Query().Get("stale"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			httpError(w, http.StatusBadRequest, "bad stale=%q: want true or false", s)
			return
		}
		stale = b
	}
	if !stale {
		if code, err := n.readBarrier(r.Context()); err != nil {
			if code == http.StatusTemporaryRedirect {
				n.notLeader(w, r)
			} else {
				w.Header().Set("Retry-After", "1")
				httpError(w, code, "linearizable read: %v", err)
			}
			return
		}
	}
	if err := n.fsm.Err(); err != nil {
		httpError(w, http.StatusServiceUnavailable, "this node's state machine stopped: %v", err)
		return
	}
	idx := n.fsm.Applied()
	v, err := n.fsm.Get(key)
	switch {
	case errors.Is(err, tierkv.ErrNotFound):
		w.Header().Set(IndexHeader, strconv.FormatUint(idx, 10))
		httpError(w, http.StatusNotFound, "not found")
	case err != nil:
		httpError(w, http.StatusInternalServerError, "read: %v", err)
	default:
		w.Header().Set(IndexHeader, strconv.FormatUint(idx, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(len(v)))
		w.WriteHeader(http.StatusOK)
		w.Write(v)
	}
}

// readBarrier makes a local read linearizable (raft's read-index method):
// the leader has committed an entry of its current term (once per term),
// takes its commit index, confirms with a quorum that it is still the
// leader, and waits for its FSM to reach that index. Every write
// acknowledged before the read began is then in the FSM.
//
// The entry of the term is an opBarrier command, not raft's Barrier: raft
// hands only commands and configuration entries to the FSM, so its own
// barrier (and the no-op a leader starts its term with) would leave the
// FSM's applied index below the commit index for good. Past the term's
// first command every entry of the term reaches the FSM.
func (n *Node) readBarrier(ctx context.Context) (int, error) {
	if n.raft.State() != raft.Leader {
		return http.StatusTemporaryRedirect, raft.ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	if n.readyTerm.Load() != term {
		f := n.raft.Apply(encodeCommand(opBarrier, []byte(n.cfg.ID), nil), n.cfg.ApplyTimeout)
		err := f.Error()
		if err == nil {
			if e, ok := f.Response().(error); ok {
				err = e
			}
		}
		if err != nil {
			return barrierCode(err), err
		}
		n.readyTerm.Store(term)
	}
	commit := n.raft.CommitIndex()
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return barrierCode(err), err
	}
	if n.raft.CurrentTerm() != term {
		return http.StatusServiceUnavailable, errors.New("the term changed during the read")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	if !n.fsm.WaitApplied(commit, ctx.Done()) {
		if err := n.fsm.Err(); err != nil {
			return http.StatusServiceUnavailable, err
		}
		return http.StatusServiceUnavailable, errors.New("timed out waiting for the state machine")
	}
	return 0, nil
}

func barrierCode(err error) int {
	if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
		return http.StatusTemporaryRedirect
	}
	return http.StatusServiceUnavailable
}

func (n *Node) serveJoin(w http.ResponseWriter, r *http.Request) {
	var j joinRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		httpError(w, http.StatusBadRequest, "bad join request: %v", err)
		return
	}
	if j.ID == "" || j.RaftAddr == "" || j.HTTPAddr == "" || len(j.ID) > 256 {
		httpError(w, http.StatusBadRequest, "a join request needs id (at most 256 bytes), raft_addr and http_addr")
		return
	}
	for _, a := range []string{j.RaftAddr, j.HTTPAddr} {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" || port == "0" {
			httpError(w, http.StatusBadRequest, "bad address %q in the join request: want host:port", a)
			return
		}
	}
	if n.raft.State() != raft.Leader {
		n.notLeader(w, r)
		return
	}
	if err := n.addVoter(j); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			n.notLeader(w, r)
			return
		}
		httpError(w, http.StatusServiceUnavailable, "join: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"joined": j.ID})
}

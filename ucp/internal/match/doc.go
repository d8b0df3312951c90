// Package match is the tag matcher of a ucp worker: posted receives,
// unexpected messages, and what happens to both when a source fails.
//
// # Ownership
//
// The worker owns every Recv and Msg (usually embedded in its requests and
// message descriptors) and keeps them alive while they are queued; the
// matcher only links them into intrusive lists, so PostRecv, Arrive,
// Probe, CancelRecv and RemoveMsg never allocate. A Recv's Tag and Mask and
// a Msg's Tag must not change while queued. A Matcher is not safe for
// concurrent use: the worker serializes all calls.
//
// # Matching
//
// A receive r matches a message with tag t if (t ^ r.Tag) & r.Mask == 0.
// Posted receives are matched in post order and unexpected messages in
// arrival order, so two messages from one source with matching tags are
// never overtaken. PostRecv takes the earliest arrived matching unexpected
// message; Arrive takes the earliest posted matching receive; Probe finds
// (and with remove takes) the earliest arrived matching unexpected message.
// Receives whose Mask is all ones sit in a hash of exact tags, the others
// on a wildcard list, each receive on that one list only; post sequence
// numbers decide between the two (as in UCX), and the failure, resume and
// drain paths rebuild post order across all lists from them. Unexpected
// messages are on one arrival list and in a hash by tag.
//
// # Sources
//
// Config.SourceMask names the tag bits that carry the sender's rank;
// SetSourceTag(s, t) records t & SourceMask as the source tag of s. With
// st the source tag of s and SM the SourceMask:
//
//   - r can only match s if SM != 0, st is known, r.Mask covers all of SM
//     and (r.Tag ^ st) & SM == 0.
//   - r could match s if SM == 0, or st is unknown, or
//     (r.Tag ^ st) & r.Mask & SM == 0. This includes every receive whose
//     mask covers none of the SM bits (a wildcard source) and every receive
//     that can only match s. (A mask covering only some SM bits is judged
//     on those bits.)
//
// The rank of a receive r is r.Tag & SM when r.Mask covers all of SM; a
// receive without a rank (a wildcard source, or SM == 0) can match any
// source. A source is live if its source tag is known and it is neither
// failed nor gone.
//
// # Failures
//
// A failed source is failed until it is purged; a purged source is gone
// (no message will come from it) until SetSourceTag or Fail is called for
// it again or the matcher forgets it (see Purge). In Suspend mode (the default) a failure is also pending until
// it is acknowledged by Resume or by Purge of that source. Matching is
// suspended while any failure is pending; in NeverSuspend mode no failure
// is ever pending.
//
// While matching is suspended, PostRecv and Arrive only queue, and Probe
// returns nil (a message seen now could belong to an earlier receive once
// matching resumes). CancelRecv, RemoveMsg, Drain, Len work as always. The
// matcher does not reject messages from failed or gone sources: if the
// worker hands one to Arrive it is matched or queued like any other (the
// worker drops them before).
//
// A posted receive r is dead when no message can match it any more: it
// has a rank, at least one source has that rank, every source of that
// rank is failed or gone, and no unexpected message matches r (data a
// source sent before it failed stays receivable). A rank that no source
// has (yet) is not dead: a source may still join with it.
//
// Fail(s), Suspend mode: s becomes failed and pending, matching stops, and
// Fail returns in post order the posted receives that could match s and
// have not been told of s; they are now told of s. The worker completes
// none of them; it tells each that a failure is pending (ULFM
// PROC_FAILED_PENDING). A receive is told of each failed source at most
// once while it stays posted: told of s1 it is not returned again for s1
// (even if Fail(s1) is repeated) but is for a later failure of s2.
// Reposting a Recv clears what it was told.
//
// Fail(s), NeverSuspend mode: s becomes failed, matching goes on, and Fail
// removes and returns in post order the posted receives that can only
// match s and are dead; the worker completes them with peer-failed.
// Wildcards are not told.
//
// CheckPosted(r) covers receives posted after a failure or a purge; the
// worker calls it when PostRecv queued r. In any mode, suspended or not,
// it removes a dead r and returns NoticePeerFailed (ULFM: a receive from
// a failed process fails at once). Otherwise, while suspended, it marks r
// told of every pending failed source r could match and has not been told
// of, and returns NoticeFailedPending if there was one. Otherwise
// NoticeNone.
//
// Resume acknowledges every pending failure and restarts matching: the
// posted receives in post order each take their earliest arrived matching
// unexpected message; the pairs are removed and returned. Messages from
// failed sources stay matchable (their data arrived before the failure),
// and receives posted before the failure that can only match a failed
// source stay posted until Purge removes them.
//
// Purge(s) removes s, failed or not, and makes it gone: the unexpected
// messages from s (returned in arrival order; the worker frees them and
// drops rendezvous state), the failure of s, every receive's told mark
// for s, and then the posted receives that can only match s and are dead
// (returned in post order; the worker completes them with peer-failed).
// If matching was suspended and no pending failure remains, matching
// restarts exactly as in Resume and the pairs are returned. The source
// tag of s is kept, so receives posted later for its rank are dead; the
// other gone sources of that rank are forgotten (one gone source per
// rank, the last purged, is enough for that), so a matcher that purges
// many sources holds at most one gone source per rank. A gone source
// without a rank (SourceMask == 0, or its source tag unknown) can make no
// receive dead: Purge forgets it at once, like a source never seen.
//
// # Rejoining
//
// Sources are identities that are not reused (the worker's endpoint ids).
// A peer that comes back (a restarted process, a new endpoint to the same
// peer) is a new source; SetSourceTag gives it its rank. That forgets
// every gone source of the rank, so receives for the rank wait for the
// new source. While a live source shares the rank of a failed or gone
// one, receives for that rank are not dead: Purge and NeverSuspend Fail
// leave them posted.
//
// # Fragments
//
// Queue holds the worker's in-flight multi-part messages (Frag: fragments
// of a large eager message, a rendezvous in progress) keyed by (Src, ID),
// the sender's message id; Purge(s) removes and returns those from s in
// the order they were added, for the worker to free when it purges s. A
// Frag's Src and ID must not change while it is queued.
package match

package bridge

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askctl/askctl/bridgeapi"
	_ "modernc.org/sqlite" // the pure-Go driver: a fresh clone needs no C toolchain
)

// The store keeps sessions, questions and the event log in one SQLite file
// (WAL), so a bridge killed with a question pending loses nothing: every
// change is committed before any surface or agent hears of it.
//
// Writes go through one writer goroutine that commits them in groups: each
// write waits for the commit of its group, and while a commit is under way
// the writes that arrive queue for the next one. Under load (hundreds of
// sessions starting) a commit carries many writes, so no write waits
// behind a long line of single-write transactions; idle, a group is one
// write. Each write runs in a savepoint of its own: one that fails leaves
// the others of its group alone.

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id                TEXT PRIMARY KEY,
	claude_session_id TEXT NOT NULL DEFAULT '',
	prompt            TEXT NOT NULL,
	scenario          TEXT NOT NULL DEFAULT '',
	claude            TEXT NOT NULL DEFAULT '',
	status            TEXT NOT NULL,
	exit_code         INTEGER,
	detail            TEXT NOT NULL DEFAULT '',
	created_at        TEXT NOT NULL,
	ended_at          TEXT
);
CREATE TABLE IF NOT EXISTS questions (
	id          TEXT PRIMARY KEY,
	session_id  TEXT NOT NULL REFERENCES sessions(id),
	request_id  TEXT NOT NULL,
	tool_use_id TEXT NOT NULL DEFAULT '',
	questions   TEXT NOT NULL,
	input       TEXT NOT NULL,
	status      TEXT NOT NULL,
	draft       TEXT NOT NULL DEFAULT '{}',
	answers     TEXT,
	reason      TEXT NOT NULL DEFAULT '',
	created_at  TEXT NOT NULL,
	deadline    TEXT NOT NULL,
	resolved_at TEXT,
	orphaned    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS questions_status ON questions(status);
CREATE INDEX IF NOT EXISTS questions_session ON questions(session_id, status);
CREATE TABLE IF NOT EXISTS revoked_keys (
	nonce      TEXT PRIMARY KEY,
	expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT NOT NULL DEFAULT '',
	data       TEXT NOT NULL,
	created_at TEXT NOT NULL
);
`

type store struct {
	db  *sql.DB // the one writer, used by the writer goroutine only
	ops chan *writeOp
	// urgent carries the writes of a person's answer or skip: the writer
	// takes them before the others waiting (a storm of session starts),
	// so an answer waits for one commit at most, not for every start.
	urgent chan *writeOp
	// isolated counts the groups run again in savepoints (a write failed).
	isolated atomic.Int64
	quit     chan struct{} // closed by Close: the writer finishes and exits
	done     chan struct{} // closed when the writer has exited
	rd       *sql.DB       // readers: in WAL mode they read what is committed while a write goes on, so a listing never waits behind session starts
	// wst and rst keep the writer's and the readers' prepared statements.
	wst, rst *stmts
	// fault, when set (tests), fails a write as a full disk would; op names
	// the write and the status it writes ("setStatus exited").
	fault atomic.Pointer[func(op string) error]
}

func (s *store) injected(op string) error {
	if f := s.fault.Load(); f != nil {
		return (*f)(op)
	}
	return nil
}

func openStore(path string) (*store, error) {
	// The database holds people's answers: readable by the user only.
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	} else {
		f.Close()
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	// One writer at a time is SQLite's rule: the writer goroutine alone
	// writes. A second connection lets it prepare a statement while its
	// transaction holds the first (stmts.get); the statement is then
	// prepared on the first too, at its first use there.
	db.SetMaxOpenConns(2)
	db.SetMaxIdleConns(2)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	if err := migrate(db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	rd, err := sql.Open("sqlite", dsn+"&_pragma=query_only(1)")
	if err != nil {
		db.Close()
		return nil, err
	}
	rd.SetMaxOpenConns(4)
	rd.SetMaxIdleConns(4) // kept open, with their prepared statements
	s := &store{db: db, rd: rd, wst: newStmts(db), rst: newStmts(rd), ops: make(chan *writeOp, maxGroup), urgent: make(chan *writeOp, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}
	go s.writer()
	return s, nil
}

// added are the columns later versions added, by table: a database an
// older bridge made gets them, with their defaults.
//
//   - questions.due: a resolution committed whose reply has not been seen
//     to reach the agent (the outbox). It is set in the same write as the
//     resolution and cleared once the reply is written whole; a bridge
//     that finds it set after a crash looks in the agent's own session file
//     for the reply, and delivers it through a resumed session if it is
//     not there, so a reply reaches the agent exactly once.
//   - sessions.agent_pid, agent_start: the agent's process and its start
//     time (its identity across pid reuse), so that a restarted bridge
//     waits for a lost session's agent to finish reading before it looks.
var added = []struct{ table, column, decl string }{
	{"questions", "due", "INTEGER NOT NULL DEFAULT 0"},
	{"sessions", "agent_pid", "INTEGER NOT NULL DEFAULT 0"},
	{"sessions", "agent_start", "TEXT NOT NULL DEFAULT ''"},
	{"sessions", "stderr", "TEXT NOT NULL DEFAULT ''"},
	// 1 while a lost session's agent file has not been read for a
	// question it asked as its bridge stopped (recoverAsked): killed, or
	// closed with the agent running (Close marks its sessions lost too).
	{"sessions", "unread", "INTEGER NOT NULL DEFAULT 0"},
}

func migrate(db *sql.DB) error {
	for _, a := range added {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info(?) WHERE name=?`, a.table, a.column).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			if _, err := db.Exec(`ALTER TABLE ` + a.table + ` ADD COLUMN ` + a.column + ` ` + a.decl); err != nil {
				return err
			}
		}
	}
	_, err := db.Exec(`CREATE INDEX IF NOT EXISTS questions_due ON questions(due) WHERE due=1`)
	return err
}

// writeOp is one write: fn runs in its group's transaction, after (if any)
// runs once the group is committed, in the order the writes were made.
type writeOp struct {
	fn    func(tx *sql.Tx) error
	after func()
	done  chan error
}

// maxGroup bounds the writes of one commit.
const maxGroup = 64

var errStoreClosed = errors.New("the database is closed")

// write runs fn in the writer's next group and waits for the commit. after,
// when not nil, runs on the writer once fn's group is committed, before the
// writes of later groups are made: it must not wait for anything that
// writes. A done ctx stops the wait, not the write.
func (s *store) write(ctx context.Context, fn func(tx *sql.Tx) error, after func()) error {
	op := &writeOp{fn: fn, after: after, done: make(chan error, 1)}
	queue := s.ops
	if isUrgent(ctx) {
		queue = s.urgent
	}
	select {
	case queue <- op:
	case <-s.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exec is write with one statement; it returns the statement's result.
func (s *store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = s.txExec(context.Background(), tx, query, args...) // the caller's ctx stops its wait, not the write
		return err
	}, nil)
	return res, err
}

type urgentKey struct{}

// urgently marks ctx's writes as a person's: they go before the writes
// waiting in the other queue. It keeps ctx's values, not its cancellation:
// a write made is committed, whoever stops waiting for it.
func urgently(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), urgentKey{}, true)
}

func isUrgent(ctx context.Context) bool { v, _ := ctx.Value(urgentKey{}).(bool); return v }

// writer commits the writes in groups until Close, a person's first.
func (s *store) writer() {
	defer close(s.done)
	for {
		var op *writeOp
		select {
		case op = <-s.urgent:
		default:
			select {
			case op = <-s.urgent:
			case op = <-s.ops:
			case <-s.quit:
				return
			}
		}
		group := []*writeOp{op}
	more:
		for len(group) < maxGroup {
			select {
			case op := <-s.urgent:
				group = append(group, op)
				continue
			default:
			}
			select {
			case op := <-s.ops:
				group = append(group, op)
			default:
				break more
			}
		}
		s.commit(group)
	}
}

// commit runs a group of writes in one transaction. Writes rarely fail, so
// the group runs first as it is; if one fails, the transaction is rolled
// back and the group runs again with each write in a savepoint, so the
// failure stays its own. (A write's fn may run twice: it only sets what it
// returns.)
func (s *store) commit(group []*writeOp) {
	errs, err := s.run(group, false)
	if err == nil && slices.ContainsFunc(errs, func(e error) bool { return e != nil }) {
		if len(group) == 1 {
			group[0].done <- errs[0] // rolled back; nothing else to keep
			return
		}
		s.isolated.Add(1)
		errs, err = s.run(group, true)
	}
	if err != nil {
		for _, op := range group {
			op.done <- err
		}
		return
	}
	for i, op := range group {
		if errs[i] == nil && op.after != nil {
			op.after()
		}
		op.done <- errs[i]
	}
}

// run runs the group's writes in one transaction and commits it, unless a
// write failed and they run without savepoints (the transaction is rolled
// back then). err is the transaction's own failure, which is every write's.
func (s *store) run(group []*writeOp, savepoints bool) (errs []error, err error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	errs = make([]error, len(group))
	exec := func(q string) error {
		_, err := tx.Exec(q)
		return err
	}
	for i, op := range group {
		if savepoints {
			if err := exec(`SAVEPOINT w`); err != nil {
				_ = tx.Rollback()
				return nil, err
			}
		}
		errs[i] = op.fn(tx)
		switch {
		case errs[i] != nil && !savepoints:
			_ = tx.Rollback()
			return errs, nil
		case errs[i] != nil:
			if err := exec(`ROLLBACK TO w`); err != nil {
				_ = tx.Rollback()
				return nil, err
			}
		}
		if savepoints {
			if err := exec(`RELEASE w`); err != nil {
				_ = tx.Rollback()
				return nil, err
			}
		}
	}
	return errs, tx.Commit()
}

func (s *store) Close() error {
	close(s.quit)
	<-s.done
	s.wst.close()
	s.rst.close()
	rerr := s.rd.Close()
	if err := s.db.Close(); err != nil {
		return err
	}
	return rerr
}

const timeFormat = time.RFC3339Nano

func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTS(s sql.NullString) time.Time {
	if !s.Valid {
		return time.Time{}
	}
	t, _ := time.Parse(timeFormat, s.String)
	return t
}

func (s *store) insertSession(ctx context.Context, ss *bridgeapi.Session) error {
	_, err := s.exec(ctx, `INSERT INTO sessions (id, prompt, scenario, claude, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		ss.ID, ss.Prompt, ss.Scenario, ss.Claude, ss.Status, ts(ss.CreatedAt))
	return err
}

// setStatus records how a session runs or ended; the CLI's session id is
// kept, whatever the caller's copy holds.
func (s *store) setStatus(ctx context.Context, ss *bridgeapi.Session) error {
	if err := s.injected("setStatus " + ss.Status); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.txSetStatus(tx, ss) }, nil)
}

func (s *store) txSetStatus(tx *sql.Tx, ss *bridgeapi.Session) error {
	var ended any
	if !ss.EndedAt.IsZero() {
		ended = ts(ss.EndedAt)
	}
	_, err := s.txExec(context.Background(), tx, `UPDATE sessions SET claude=?, status=?, exit_code=?, detail=?, ended_at=? WHERE id=?`,
		ss.Claude, ss.Status, ss.ExitCode, ss.Detail, ended, ss.ID)
	return err
}

// setStatusLogged is setStatus, the end of the agent's stderr (when stderr
// is not nil) and the event data logged, in one commit: whoever reads the
// status finds the event in the log. after(seq) is appendEvent's.
func (s *store) setStatusLogged(ctx context.Context, ss *bridgeapi.Session, stderr *string, data []byte, now time.Time, after func(seq int64)) error {
	if err := s.injected("setStatus " + ss.Status); err != nil {
		return err
	}
	var seq int64
	return s.write(ctx, func(tx *sql.Tx) error {
		if stderr != nil {
			if _, err := s.txExec(context.Background(), tx, `UPDATE sessions SET stderr=? WHERE id=?`, *stderr, ss.ID); err != nil {
				return err
			}
		}
		if err := s.txSetStatus(tx, ss); err != nil {
			return err
		}
		var err error
		seq, err = s.txAppendEvent(tx, ss.ID, data, now)
		return err
	}, func() { after(seq) })
}

// revokeKey records that the page key with nonce no longer works; it is
// kept until the key would have expired.
func (s *store) revokeKey(ctx context.Context, nonce string, expires, now time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := s.txExec(ctx, tx, `DELETE FROM revoked_keys WHERE expires_at < ?`, ts(now)); err != nil {
			return err
		}
		_, err := s.txExec(ctx, tx, `INSERT OR IGNORE INTO revoked_keys (nonce, expires_at) VALUES (?, ?)`, nonce, ts(expires))
		return err
	}, nil)
}

// revokedKeys is the nonces of the revoked keys not yet expired.
func (s *store) revokedKeys(ctx context.Context, now time.Time) (map[string]bool, error) {
	rows, err := s.query(ctx, `SELECT nonce FROM revoked_keys WHERE expires_at >= ?`, ts(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

// setRunning records that a session's agent runs, and its process.
func (s *store) setRunning(ctx context.Context, ss *bridgeapi.Session, pid int, start string) error {
	if err := s.injected("setStatus " + ss.Status); err != nil {
		return err
	}
	_, err := s.exec(ctx, `UPDATE sessions SET claude=?, status=?, exit_code=NULL, detail=?, ended_at=NULL, agent_pid=?, agent_start=? WHERE id=?`,
		ss.Claude, ss.Status, ss.Detail, pid, start, ss.ID)
	return err
}

// stderr is the end of what the session's (latest) agent wrote on
// stderr, as setStatusLogged kept it, for askctl session logs.
func (s *store) stderr(ctx context.Context, id string) (string, error) {
	var out string
	err := s.queryRow(ctx, `SELECT stderr FROM sessions WHERE id=?`, id).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return "", bridgeapi.ErrNotFound
	}
	return out, err
}

// setClaudeSession records the CLI's own session id, what --resume takes.
func (s *store) setClaudeSession(ctx context.Context, id, claudeSession string) error {
	_, err := s.exec(ctx, `UPDATE sessions SET claude_session_id=? WHERE id=?`, claudeSession, id)
	return err
}

const sessionCols = `id, claude_session_id, prompt, scenario, claude, status, exit_code, detail, created_at, ended_at`

func scanSession(sc interface{ Scan(...any) error }) (*bridgeapi.Session, error) {
	var ss bridgeapi.Session
	var created, ended sql.NullString
	var code sql.NullInt64
	if err := sc.Scan(&ss.ID, &ss.ClaudeSessionID, &ss.Prompt, &ss.Scenario, &ss.Claude, &ss.Status, &code, &ss.Detail, &created, &ended); err != nil {
		return nil, err
	}
	if code.Valid {
		c := int(code.Int64)
		ss.ExitCode = &c
	}
	ss.CreatedAt, ss.EndedAt = parseTS(created), parseTS(ended)
	return &ss, nil
}

func (s *store) session(ctx context.Context, id string) (*bridgeapi.Session, error) {
	ss, err := scanSession(s.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, bridgeapi.ErrNotFound
	}
	return ss, err
}

func (s *store) sessions(ctx context.Context) ([]*bridgeapi.Session, error) {
	rows, err := s.query(ctx, `SELECT `+sessionCols+` FROM sessions ORDER BY created_at`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*bridgeapi.Session
	for rows.Next() {
		ss, err := scanSession(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

// markLost marks the sessions a previous bridge left running: their agents
// died with it. Their pending questions stay pending, orphaned: an answer
// resumes the session (the late-answer path).
func (s *store) markLost(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		n, err = markLost(ctx, tx, now)
		return err
	}, nil)
	return int(n), err
}

func markLost(ctx context.Context, tx *sql.Tx, now time.Time) (int64, error) {
	// A session still "starting" never got its prompt (running is stored
	// first): it is not lost, and the next bridge starts it.
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET status=?, detail=?, ended_at=?, unread=1 WHERE status=?`,
		bridgeapi.StatusLost, "the bridge stopped while the agent ran", ts(now), bridgeapi.StatusRunning)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	// A session whose agent never said its session id cannot be resumed:
	// its questions can never be answered.
	if _, err := tx.ExecContext(ctx, `UPDATE questions SET status=?, reason=?, resolved_at=? WHERE status=? AND session_id IN (SELECT id FROM sessions WHERE status=? AND claude_session_id='')`,
		bridgeapi.QuestionWithdrawn, "the bridge stopped before the agent said its session id: the session cannot be resumed", ts(now), bridgeapi.QuestionPending, bridgeapi.StatusLost); err != nil {
		return 0, err
	}
	if !defect("orphan-not-marked") {
		if _, err := tx.ExecContext(ctx, `UPDATE questions SET orphaned=1 WHERE status=? AND session_id IN (SELECT id FROM sessions WHERE status=?)`, bridgeapi.QuestionPending, bridgeapi.StatusLost); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// unread lists the lost sessions whose agent's file no bridge has read
// to the end for a question it asked as its bridge died: a bridge killed
// while it read leaves it to the next.
func (s *store) unread(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT id FROM sessions WHERE unread=1 AND status=?`, bridgeapi.StatusLost)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// read records that session id's agent file was read for a question it
// asked as its bridge died.
func (s *store) read(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE sessions SET unread=0 WHERE id=?`, id)
		return err
	}, nil)
}

func (s *store) insertQuestion(ctx context.Context, q *bridgeapi.Question) error {
	qs, _ := json.Marshal(q.Questions)
	deadline := q.Deadline
	if defect("deadline-stored-as-created") {
		deadline = q.CreatedAt
	}
	_, err := s.exec(ctx, `INSERT INTO questions (id, session_id, request_id, tool_use_id, questions, input, status, created_at, deadline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		q.ID, q.SessionID, q.RequestID, q.ToolUseID, string(qs), string(q.Input), q.Status, ts(q.CreatedAt), ts(deadline))
	return err
}

// insertOrphan stores a pending question of a lost session (its agent
// asked as a previous bridge stopped).
func (s *store) insertOrphan(ctx context.Context, q *bridgeapi.Question) error {
	qs, _ := json.Marshal(q.Questions)
	_, err := s.exec(ctx, `INSERT INTO questions (id, session_id, request_id, tool_use_id, questions, input, status, created_at, deadline, orphaned) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		q.ID, q.SessionID, q.RequestID, q.ToolUseID, string(qs), string(q.Input), q.Status, ts(q.CreatedAt), ts(q.Deadline))
	return err
}

// resolve moves a pending question to status, if it is still pending: the
// first resolution wins, in the database as on the wire. due says a reply
// is to reach the agent: it stays due until delivered says it did.
func (s *store) resolve(ctx context.Context, id, status string, answers map[string]string, reason string, due bool, now time.Time) (bool, error) {
	if err := s.injected("resolve " + status); err != nil {
		return false, err
	}
	var a any
	if answers != nil {
		b, _ := json.Marshal(answers)
		a = string(b)
	}
	res, err := s.exec(ctx, `UPDATE questions SET status=?, answers=?, reason=?, resolved_at=?, due=? WHERE id=? AND status=?`,
		status, a, reason, ts(now), due, id, bridgeapi.QuestionPending)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// reopen sets a question that was resolved back to status (pending, or the
// withdrawal that really happened), clearing its answers: nothing reached
// the agent.
func (s *store) reopen(ctx context.Context, id, status, reason string) error {
	var resolved any
	if status != bridgeapi.QuestionPending {
		resolved = ts(time.Now())
	}
	_, err := s.exec(ctx, `UPDATE questions SET status=?, answers=NULL, reason=?, resolved_at=?, due=0 WHERE id=?`, status, reason, resolved, id)
	return err
}

// delivered records that question id's reply reached its agent.
func (s *store) delivered(ctx context.Context, id string) error {
	_, err := s.exec(ctx, `UPDATE questions SET due=0 WHERE id=? AND due=1`, id)
	return err
}

// due lists the questions whose replies were committed and not seen to
// reach their agents, oldest first.
func (s *store) due(ctx context.Context) ([]*bridgeapi.Question, error) {
	return s.queryQuestions(ctx, `due=1 ORDER BY resolved_at, id`)
}

// agent is the process a session's agent last ran as (0 if none was
// recorded).
func (s *store) agent(ctx context.Context, id string) (pid int, start string, err error) {
	err = s.queryRow(ctx, `SELECT agent_pid, agent_start FROM sessions WHERE id=?`, id).Scan(&pid, &start)
	return pid, start, err
}

// saveDraft keeps the answers given so far to a multi-question request.
func (s *store) saveDraft(ctx context.Context, id string, draft map[string]string) error {
	b, _ := json.Marshal(draft)
	_, err := s.exec(ctx, `UPDATE questions SET draft=? WHERE id=? AND status=?`, string(b), id, bridgeapi.QuestionPending)
	return err
}

const questionCols = `id, session_id, request_id, tool_use_id, questions, input, status, draft, answers, reason, created_at, deadline, resolved_at, orphaned`

func scanQuestion(sc interface{ Scan(...any) error }) (*bridgeapi.Question, error) {
	var q bridgeapi.Question
	var qs, input, draft string
	var answers, created, deadline, resolved sql.NullString
	if err := sc.Scan(&q.ID, &q.SessionID, &q.RequestID, &q.ToolUseID, &qs, &input, &q.Status, &draft, &answers, &q.Reason, &created, &deadline, &resolved, &q.Orphaned); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(qs), &q.Questions); err != nil {
		return nil, fmt.Errorf("question %s: %w", q.ID, err)
	}
	q.Input = json.RawMessage(input)
	_ = json.Unmarshal([]byte(draft), &q.Draft)
	if answers.Valid {
		_ = json.Unmarshal([]byte(answers.String), &q.Answers)
	}
	q.CreatedAt, q.Deadline, q.ResolvedAt = parseTS(created), parseTS(deadline), parseTS(resolved)
	return &q, nil
}

func (s *store) question(ctx context.Context, id string) (*bridgeapi.Question, error) {
	q, err := scanQuestion(s.queryRow(ctx, `SELECT `+questionCols+` FROM questions WHERE id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, bridgeapi.ErrNotFound
	}
	return q, err
}

// questions lists questions, oldest first; status and session filter when set.
func (s *store) questions(ctx context.Context, status, session string) ([]*bridgeapi.Question, error) {
	// Only the conditions given, so SQLite uses the indexes: a session's
	// questions are looked up with every status event, and a scan of all
	// of them made a burst of sessions quadratic.
	where, args := "1", []any{}
	if status != "" {
		where, args = where+" AND status=?", append(args, status)
	}
	if session != "" {
		where, args = where+" AND session_id=?", append(args, session)
	}
	return s.queryQuestions(ctx, where+` ORDER BY created_at, id`, args...)
}

// queryQuestions is the questions that where (with its ORDER BY) selects.
func (s *store) queryQuestions(ctx context.Context, where string, args ...any) ([]*bridgeapi.Question, error) {
	rows, err := s.query(ctx, `SELECT `+questionCols+` FROM questions WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*bridgeapi.Question
	for rows.Next() {
		q, err := scanQuestion(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// appendEvent logs an event; after(seq) runs once it is committed, in the
// order of the log (see write).
func (s *store) appendEvent(ctx context.Context, session string, data []byte, now time.Time, after func(seq int64)) error {
	var seq int64
	return s.write(ctx, func(tx *sql.Tx) (err error) {
		seq, err = s.txAppendEvent(tx, session, data, now)
		return err
	}, func() { after(seq) })
}

func (s *store) txAppendEvent(tx *sql.Tx, session string, data []byte, now time.Time) (int64, error) {
	res, err := s.txExec(context.Background(), tx, `INSERT INTO events (session_id, data, created_at) VALUES (?, ?, ?)`, session, string(data), ts(now))
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// head is the sequence number of the latest logged event (0: none).
func (s *store) head(ctx context.Context) (int64, error) {
	var n int64
	err := s.queryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&n)
	return n, err
}

// eventsAfter returns the logged events after seq, for a stream that
// resumes (SSE Last-Event-ID), at most limit of them.
func (s *store) eventsAfter(ctx context.Context, seq int64, session string, limit int) ([]bridgeapi.Event, error) {
	rows, err := s.query(ctx, `SELECT seq, data FROM events WHERE seq > ? AND (?='' OR session_id=? OR session_id='') ORDER BY seq LIMIT ?`, seq, session, session, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []bridgeapi.Event
	for rows.Next() {
		var e bridgeapi.Event
		var data string
		if err := rows.Scan(&e.Seq, &data); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// stmts keeps a database's prepared statements by their text, so that a
// statement is parsed once per connection, not at each use: parsing was a
// fifth of the bridge's CPU while sessions start at load (BenchmarkLoad).
// The texts are this file's: a fixed, small set.
type stmts struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmts(db *sql.DB) *stmts { return &stmts{db: db, m: map[string]*sql.Stmt{}} }

func (c *stmts) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		_ = st.Close()
		delete(c.m, q)
	}
}

// txExec runs a prepared statement in a write's transaction.
func (s *store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.wst.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
}

// query and queryRow read through the readers' prepared statements.
func (s *store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.rst.get(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.rst.get(ctx, query)
	if err != nil {
		return s.rd.QueryRowContext(ctx, query, args...) // it fails the same way, as a Row
	}
	return st.QueryRowContext(ctx, args...)
}

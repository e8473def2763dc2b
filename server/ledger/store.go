package ledger

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// storedRecord is the stored form of a Record, with exact amounts.
type storedRecord struct {
	Record
	EpsExact   string `json:"epsilon_exact"`
	DeltaExact string `json:"delta_exact"`
}

// dbKey is the key of a database inside an analyst's bucket: database names
// are case-insensitive, as in go-mysql-server.
func dbKey(database string) []byte { return []byte(strings.ToLower(database)) }

func getAccount(tx *bolt.Tx, analyst, database string) (account, state, error) {
	var a account
	b := tx.Bucket(bucketAccounts).Bucket([]byte(analyst))
	var v []byte
	if b != nil {
		v = b.Get(dbKey(database))
	}
	if v == nil {
		return a, state{}, fmt.Errorf("ledger: %w: analyst %q has no budget on database %q", ErrNoBudget, analyst, database)
	}
	if err := json.Unmarshal(v, &a); err != nil {
		return a, state{}, fmt.Errorf("ledger: corrupt account %q/%q: %w", analyst, database, err)
	}
	st, err := a.state()
	return a, st, err
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

func putJSON(b *bolt.Bucket, k []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(k, data)
}

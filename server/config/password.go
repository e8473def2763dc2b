package config

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/mysql"
)

// MySQL authentication plugins whose password hashes the configuration
// accepts. go-mysql-server v0.20.0 verifies both against the
// authentication string of the account (sql/mysql_db/auth.go):
// mysql_native_password by the challenge–response on SHA1(SHA1(password)),
// caching_sha2_password by recomputing the salted SHA-256 crypt of the
// password the client sends (only over TLS or a Unix socket; it keeps no
// authentication cache, so every login is a full one).
const (
	NativePassword      = "mysql_native_password"
	CachingSha2Password = "caching_sha2_password"
)

// DefaultSha2Iterations is the caching_sha2_password cost HashPassword uses:
// 5 (×1000 SHA-256 rounds), MySQL's default.
const DefaultSha2Iterations = mysql.DefaultCachingSha2PasswordHashIterations

// PasswordHash is a parsed password_hash: the account's auth plugin and its
// authentication string as MySQL stores it in mysql.user. Install it with
// go-mysql-server's mysql_db.User{Plugin: h.Plugin, AuthString:
// h.AuthString}.
type PasswordHash struct {
	Plugin     string
	AuthString string
}

// String returns the hash as written in a configuration file: the
// authentication string itself when it is printable, else 0x and its hex.
func (h PasswordHash) String() string {
	for i := 0; i < len(h.AuthString); i++ {
		if c := h.AuthString[i]; c < 0x20 || c > 0x7e || c == '\'' || c == '"' || c == '\\' {
			return "0x" + strings.ToUpper(hex.EncodeToString([]byte(h.AuthString)))
		}
	}
	return h.AuthString
}

const (
	sha2Prefix      = "$A$"
	sha2SaltLen     = 20
	sha2DigestLen   = 43
	sha2Len         = len(sha2Prefix) + 3 + 1 + sha2SaltLen + sha2DigestLen
	cryptAlphabet   = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	plaintextAdvice = "password_hash must be a hash printed by `dpsql passwd` — mysql_native_password: '*' and 40 hex digits; caching_sha2_password: '$A$005$…' (70 characters) or 0x and its hex — never a plaintext password"
)

// ParsePasswordHash recognises a password hash of either plugin:
//
//   - mysql_native_password: "*" followed by 40 hex digits, the
//     upper-case hex of SHA1(SHA1(password)) (MySQL's PASSWORD() format,
//     as in mysql.user.authentication_string);
//   - caching_sha2_password: "$A$" + 3 hex digits of iterations (×1000
//     SHA-256 rounds) + "$" + 20 bytes of salt + 43 characters of digest,
//     70 bytes in all (mysql.user.authentication_string), written either
//     as is or, since MySQL's salts may hold unprintable bytes, as "0x"
//     followed by the hex of those 70 bytes (SHOW CREATE USER with
//     print_identified_with_as_hex, or SELECT HEX(authentication_string)).
func ParsePasswordHash(s string) (PasswordHash, error) {
	switch {
	case strings.HasPrefix(s, "*"):
		h := s[1:]
		if len(h) != 40 {
			return PasswordHash{}, fmt.Errorf("a mysql_native_password hash is '*' and 40 hex digits; this one has %d characters after '*'. %s", len(h), plaintextAdvice)
		}
		if _, err := hex.DecodeString(h); err != nil {
			return PasswordHash{}, fmt.Errorf("a mysql_native_password hash is '*' and 40 hex digits; %q is not hex. %s", h, plaintextAdvice)
		}
		return PasswordHash{Plugin: NativePassword, AuthString: "*" + strings.ToUpper(h)}, nil
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		b, err := hex.DecodeString(s[2:])
		if err != nil || !strings.HasPrefix(string(b), sha2Prefix) {
			return PasswordHash{}, fmt.Errorf("a hex password hash must be the hex of a caching_sha2_password authentication string ($A$…). %s", plaintextAdvice)
		}
		return parseSha2(string(b))
	case strings.HasPrefix(s, sha2Prefix):
		return parseSha2(s)
	}
	return PasswordHash{}, fmt.Errorf("%s", plaintextAdvice)
}

func parseSha2(s string) (PasswordHash, error) {
	if len(s) != sha2Len {
		return PasswordHash{}, fmt.Errorf("a caching_sha2_password hash has %d bytes, this one %d (if it holds unprintable or quote characters, write it as 0x and its hex). %s", sha2Len, len(s), plaintextAdvice)
	}
	it, err := strconv.ParseUint(s[3:6], 16, 16)
	if err != nil || s[6] != '$' {
		return PasswordHash{}, fmt.Errorf("a caching_sha2_password hash starts with $A$, 3 hex digits of iterations and $, like $A$005$. %s", plaintextAdvice)
	}
	if it < 5 {
		return PasswordHash{}, fmt.Errorf("caching_sha2_password hash with %d iterations: MySQL uses at least 5 (5,000 rounds)", it)
	}
	salt := s[7 : 7+sha2SaltLen]
	if strings.ContainsRune(salt, 0) {
		return PasswordHash{}, fmt.Errorf("caching_sha2_password hash: the salt must not contain NUL bytes")
	}
	for _, c := range []byte(s[7+sha2SaltLen:]) {
		if strings.IndexByte(cryptAlphabet, c) < 0 {
			return PasswordHash{}, fmt.Errorf("caching_sha2_password hash: the digest (last 43 characters) may contain only %s. %s", cryptAlphabet, plaintextAdvice)
		}
	}
	return PasswordHash{Plugin: CachingSha2Password, AuthString: s}, nil
}

// HashPassword hashes password for plugin (NativePassword or
// CachingSha2Password); the caching_sha2_password salt is 20 characters
// drawn with crypto/rand from a printable alphabet, so the hash can be
// pasted into YAML as is.
func HashPassword(plugin, password string) (PasswordHash, error) {
	if password == "" {
		return PasswordHash{}, fmt.Errorf("empty passwords are not allowed")
	}
	switch plugin {
	case NativePassword:
		s1 := sha1.Sum([]byte(password))
		s2 := sha1.Sum(s1[:])
		return PasswordHash{Plugin: NativePassword, AuthString: "*" + strings.ToUpper(hex.EncodeToString(s2[:]))}, nil
	case CachingSha2Password:
		salt := []byte(rand.Text()[:sha2SaltLen]) // base32: A–Z, 2–7; 100 bits
		auth, err := mysql.SerializeCachingSha2PasswordAuthString(password, salt, DefaultSha2Iterations)
		if err != nil {
			return PasswordHash{}, err
		}
		return PasswordHash{Plugin: CachingSha2Password, AuthString: string(auth)}, nil
	}
	return PasswordHash{}, fmt.Errorf("unknown auth plugin %q: use %s or %s", plugin, CachingSha2Password, NativePassword)
}

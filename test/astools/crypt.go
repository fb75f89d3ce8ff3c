package astools

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
)

// fileCodec is how the tools' io_proxy (src/io_proxy.c) writes and reads a backup file with --compress
// and --encrypt: the text compressed with zstd, then encrypted with AES in CTR mode under the SHA-256
// of the key (its first 16 bytes for aes128, all 32 for aes256); an encrypted file begins with its IV
// encrypted as one AES block (the IV: 4 bytes of the time, big-endian, then 12 random), and the stream
// counts from the IV plus one.
type fileCodec struct {
	compress bool
	key      []byte // the AES key (the digest's prefix); nil: not encrypted
}

// newFileCodec reads the options: compression "" or "zstd", encryption "", "aes128" or "aes256" with
// the key's bytes.
func newFileCodec(compression, encryption string, key []byte) fileCodec {
	c := fileCodec{compress: compression == "zstd"}
	if encryption != "" {
		digest := sha256.Sum256(key)
		c.key = digest[:map[string]int{"aes128": 16, "aes256": 32}[encryption]]
	}
	return c
}

// writer wraps a file: what is written is compressed and encrypted; close flushes it (the file is the
// caller's to close).
func (c fileCodec) writer(w io.Writer) (io.Writer, func() error, error) {
	if c.key != nil {
		block, err := aes.NewCipher(c.key)
		if err != nil {
			return nil, nil, err
		}
		iv := make([]byte, aes.BlockSize)
		binary.BigEndian.PutUint32(iv, uint32(time.Now().Unix()))
		if _, err := rand.Read(iv[4:]); err != nil {
			return nil, nil, err
		}
		head := make([]byte, aes.BlockSize)
		block.Encrypt(head, iv)
		if _, err := w.Write(head); err != nil {
			return nil, nil, err
		}
		w = cipher.StreamWriter{S: cipher.NewCTR(block, plusOne(iv)), W: w}
	}
	if !c.compress {
		return w, func() error { return nil }, nil
	}
	z, err := zstd.NewWriter(w)
	if err != nil {
		return nil, nil, err
	}
	return z, z.Close, nil
}

// reader unwraps a file written by writer.
func (c fileCodec) reader(r io.Reader) (io.Reader, error) {
	if c.key != nil {
		block, err := aes.NewCipher(c.key)
		if err != nil {
			return nil, err
		}
		head := make([]byte, aes.BlockSize)
		if n, err := io.ReadFull(r, head); err != nil {
			return nil, fmt.Errorf("Error when reading IV from file: only %d bytes were found, "+ //nolint:staticcheck // the tool's words
				"but expected %d", n, aes.BlockSize)
		}
		iv := make([]byte, aes.BlockSize)
		block.Decrypt(iv, head)
		r = cipher.StreamReader{S: cipher.NewCTR(block, plusOne(iv)), R: r}
	}
	if !c.compress {
		return r, nil
	}
	z, err := zstd.NewReader(r)
	if err != nil {
		return nil, err
	}
	return z.IOReadCloser(), nil
}

// plusOne is a 128-bit big-endian counter plus one (_ctr128_add_to).
func plusOne(iv []byte) []byte {
	out := append([]byte(nil), iv...)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			break
		}
	}
	return out
}

// keyFromEnv is parse_encryption_key_env (src/utils.c): the variable holds the key's bytes in base64.
func keyFromEnv(env func(string) string, name string) ([]byte, string) {
	value := env(name)
	if value == "" {
		return nil, fmt.Sprintf("No environment variable \"%s\" found\n", name)
	}
	key, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		// The tool's own spelling.
		return nil, fmt.Sprintf("Unable to decode enviroment variable \"%s\" as base64\n", name) //nolint:misspell
	}
	return key, ""
}

package astools

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	as "github.com/aerospike/aerospike-client-go/v7"
)

// The sample backup file of aerospike-tools-backup's README: two secondary indexes, a UDF file whose
// content holds line feeds, and a record.
const readmeSample = "Version 3.1\n# namespace test\n# first-file\n" +
	"* i test test-set int-index N 1 int-bin N\n* i test test-set string-index N 1 string-bin S\n" +
	"* u L test.lua 27 -- just an empty Lua file\n\n\n" +
	"+ n test\n+ d q+LsiGs1gD9duJDbzQSXytajtCY=\n+ s test-set\n+ g 1\n+ t 0\n+ b 2\n" +
	"- I int-bin 12345\n- S string-bin 5 abcde\n"

func TestReadTheFormatsSample(t *testing.T) {
	r, err := NewReader(strings.NewReader(readmeSample))
	if err != nil {
		t.Fatal(err)
	}
	if r.Namespace != "test" || !r.First {
		t.Fatalf("meta data: namespace %q first %v", r.Namespace, r.First)
	}
	rec, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := base64.StdEncoding.DecodeString("q+LsiGs1gD9duJDbzQSXytajtCY=")
	want := Record{Namespace: "test", Set: "test-set", Digest: digest, Generation: 1,
		Bins: as.BinMap{"int-bin": int64(12345), "string-bin": "abcde"}}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("got %+v, want %+v", rec, want)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last record: %v, want EOF", err)
	}
}

// Every type this stand-in writes reads back equal, names and values with spaces, line feeds and
// backslashes included; the file is the same for the same records.
func TestRoundTrip(t *testing.T) {
	digest := bytes.Repeat([]byte{7}, 20)
	recs := []Record{
		{Namespace: "name space", Set: "a set\nwith lf", Digest: digest, Key: "user key", Generation: 3, Expiration: 500_000_000,
			Bins: as.BinMap{"nil": nil, "yes": true, "int": int64(-42), "pi": 3.25, "inf": math.Inf(-1),
				"str": "two\nlines \\ and spaces", "raw": []byte{0, 1, 2, '\n'}, "bin name": "x"}},
		{Namespace: "name space", Digest: digest, Key: int64(9), Generation: 1, Bins: as.BinMap{}},
		{Namespace: "name space", Digest: digest, Key: []byte("k"), Generation: 1, Bins: as.BinMap{"f": 1.5}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, "name space", true)
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil || r.Namespace != "name space" || !r.First {
		t.Fatalf("header: %v %q %v\n%s", err, r.Namespace, r.First, buf.String())
	}
	for i, want := range recs {
		got, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v\n%s", i, err, buf.String())
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %d: got %+v, want %+v", i, got, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("after the last record: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	if err := NewWriter(io.Discard, "test", false).Write(Record{Namespace: "test", Digest: make([]byte, 20),
		Bins: as.BinMap{"l": []any{1}}}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("a list bin: %v", err)
	}
	for name, text := range map[string]string{
		"no header":           "+ n test\n",
		"another version":     "Version 4.0\n",
		"unknown meta data":   "Version 3.1\n# namespace test\n# compressed\n",
		"a short digest":      "Version 3.1\n+ n test\n+ d AAAA\n+ g 1\n+ t 0\n+ b 0\n",
		"a bin cut short":     "Version 3.1\n+ n test\n+ d q+LsiGs1gD9duJDbzQSXytajtCY=\n+ g 1\n+ t 0\n+ b 1\n- S s 5 ab",
		"too few bins":        "Version 3.1\n+ n test\n+ d q+LsiGs1gD9duJDbzQSXytajtCY=\n+ g 1\n+ t 0\n+ b 2\n- I i 1\n",
		"an unknown type":     "Version 3.1\n+ n test\n+ d q+LsiGs1gD9duJDbzQSXytajtCY=\n+ g 1\n+ t 0\n+ b 1\n- L l 4 AAAA\n",
		"header out of order": "Version 3.1\n+ d q+LsiGs1gD9duJDbzQSXytajtCY=\n+ n test\n",
	} {
		r, err := NewReader(strings.NewReader(text))
		if err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}

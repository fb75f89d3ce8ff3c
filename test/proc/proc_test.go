package proc

import "testing"

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses; fields count from the last ')'.
	st, err := ParseStat("42 (a (b) c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != 'S' || st.PPID != 7 || st.Start != 123456 {
		t.Fatalf("got %+v", st)
	}
	if _, err := ParseStat("42 (x) S 7"); err == nil {
		t.Fatal("short stat parsed")
	}
}

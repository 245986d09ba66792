//go:build linux

package seccomp

import (
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/net/bpf"
)

// data is a struct seccomp_data for the filter (nr, arch, ip, args) as a
// little-endian machine lays it out, 32-bit words at their places. The
// interpreter loads words big-endian (network order), so each word is
// written that way.
func data(arch uint32, nr int, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))       // low word first
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32)) // then the high one
	}
	return b
}

// vm runs the assembled profile in a BPF interpreter.
func vm(t *testing.T) *bpf.VM {
	t.Helper()
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	ins := make([]bpf.Instruction, len(prog))
	for i, r := range prog {
		ins[i] = bpf.RawInstruction{Op: r.Code, Jt: r.Jt, Jf: r.Jf, K: r.K}.Disassemble()
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func auditArchOrSkip(t *testing.T) uint32 {
	a, err := auditArch()
	if err != nil {
		t.Skip(err)
	}
	return a
}

// TestEveryRuleNamesACall: a misspelt name would refuse nothing.
func TestEveryRuleNamesACall(t *testing.T) {
	numbers, err := syscallNumbers("amd64")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules() {
		if _, ok := numbers[r.name]; !ok {
			t.Errorf("%s is no x86-64 system call", r.name)
		}
	}
}

// TestEveryRefusedCallIsRefused runs each unconditionally refused call
// through the filter.
func TestEveryRefusedCallIsRefused(t *testing.T) {
	native := auditArchOrSkip(t)
	numbers, err := syscallNumbers(runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	v := vm(t)
	for _, name := range refused {
		nr, ok := numbers[name]
		if !ok {
			continue
		}
		got, err := v.Run(data(native, nr))
		if err != nil {
			t.Fatal(err)
		}
		if uint32(got) != retEPERM {
			t.Errorf("%s: got %#x, want EPERM", name, got)
		}
	}
}

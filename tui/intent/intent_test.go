package intent

import "testing"

type closeMsg struct{}

func TestTakeForgets(t *testing.T) {
	var s Slot
	if s.Take() != nil {
		t.Fatal("an empty slot holds a request")
	}
	s.Ask(closeMsg{})
	if _, ok := s.Take().(closeMsg); !ok {
		t.Fatal("the request was not returned")
	}
	if s.Take() != nil {
		t.Fatal("a taken request was returned twice")
	}
}

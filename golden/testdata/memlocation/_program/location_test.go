package golden

import "testing"

// TestID sets and reads id from Go as a field, in a composite literal and
// by assignment, and checks it against C's loc.id both ways.
func TestID(t *testing.T) {
	loc := MemLocation{Type: MEM_LOCATION_TYPE_DEVICE, Id: 3}
	if got := cID(&loc); got != 3 {
		t.Errorf("MemLocation{Id: 3}: C reads id %d", got)
	}
	loc.Id = -2
	if got := cID(&loc); got != -2 {
		t.Errorf("loc.Id = -2: C reads id %d", got)
	}
	setCID(&loc, 7)
	if loc.Id != 7 {
		t.Errorf("C set id 7: loc.Id is %d", loc.Id)
	}
	if loc.Type != MEM_LOCATION_TYPE_DEVICE {
		t.Errorf("loc.Type is %v after setting id, want %v", loc.Type, MEM_LOCATION_TYPE_DEVICE)
	}
}

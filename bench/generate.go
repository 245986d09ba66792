package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path"
)

// Generators add to a staged tree what a fixture is too large to hold,
// by the name its bench.json gives in "generate". Each must write the
// same files every time: every case of a task starts from the same tree.
var Generators = map[string]func(root *os.Root) error{
	"inventory": generateInventory,
}

// The inventory tree of the big-inventory task: InventoryFiles item files
// under inventory/, 20 regions of 20 aisles holding 45 items each, and 100
// items directly in each region, so that a tool that looks one level deep
// sees a tenth of them.
const (
	InventoryFiles   = inventoryRegions * (inventoryAisles*inventoryPerAisle + inventoryPerRegion)
	inventoryRegions = 20
	inventoryAisles  = 20
	// inventoryPerAisle and inventoryPerRegion are the items of an aisle and
	// those that lie in a region's own directory.
	inventoryPerAisle  = 45
	inventoryPerRegion = 100
)

// inventoryRegionNames name the regions; aisles are a00…a19.
var inventoryRegionNames = []string{
	"north", "south", "east", "west", "central", "harbour", "airport", "hills", "river", "valley",
	"market", "station", "garden", "bridge", "castle", "forest", "lake", "meadow", "quarry", "tower",
}

// generateInventory writes the inventory tree into root. The weights come
// from a fixed seed, so every case of the task starts from the same tree;
// the checker never uses it (it draws trees of its own).
func generateInventory(root *os.Root) error {
	rng := rand.New(rand.NewPCG(0x1d1e, 0xbe7c4))
	item := func(dir string, n int) error {
		name := fmt.Sprintf("%s-%05d", path.Base(dir), n)
		body := fmt.Sprintf("name: %s\nweight: %d\nsku: %08x\n", name, 1+rng.IntN(5000), rng.Uint32())
		return root.WriteFile(path.Join(dir, name+".item"), []byte(body), 0o644)
	}
	n := 0
	for _, region := range inventoryRegionNames[:inventoryRegions] {
		regionDir := path.Join("inventory", region)
		for a := range inventoryAisles {
			aisle := path.Join(regionDir, fmt.Sprintf("a%02d", a))
			if err := root.MkdirAll(aisle, 0o755); err != nil {
				return err
			}
			for range inventoryPerAisle {
				if err := item(aisle, n); err != nil {
					return err
				}
				n++
			}
		}
		for range inventoryPerRegion {
			if err := item(regionDir, n); err != nil {
				return err
			}
			n++
		}
	}
	return nil
}

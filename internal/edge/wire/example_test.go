package wire_test

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/edge/wire"
)

func ExampleCheck() {
	_, err := wire.Check([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","name":"run_pipeline"}}`))
	var we *wire.Error
	if errors.As(err, &we) {
		fmt.Println(we.Code, errors.Is(err, wire.ErrDuplicateKey))
		fmt.Println(we.Message)
	}
	// Output:
	// -32600 true
	// Invalid request: an object has the key "name" twice (duplicate keys are refused: readers disagree on which one counts)
}

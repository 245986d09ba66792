package docker

import (
	"errors"
	"strings"
	"testing"
)

func TestCopyProgress(t *testing.T) {
	tests := []struct {
		name    string
		stream  string
		wantOut string
		wantID  string
		wantErr string // "" when the stream reports success
	}{
		{
			name: "build output and the image Id",
			stream: `{"stream":"Step 1/2 : FROM base\n"}
{"stream":" ---\u003e 1a2b3c\n"}
{"aux":{"ID":"sha256:1a2b3c"}}
{"stream":"Successfully built 1a2b3c\n"}`,
			wantOut: "Step 1/2 : FROM base\n ---> 1a2b3c\nSuccessfully built 1a2b3c\n",
			wantID:  "sha256:1a2b3c",
		},
		{
			name: "a failing step ends the build with the daemon's text",
			stream: `{"stream":"Step 2/2 : RUN false\n"}
{"errorDetail":{"code":1,"message":"The command '/bin/sh -c false' returned a non-zero code: 1"},"error":"The command '/bin/sh -c false' returned a non-zero code: 1"}
{"stream":"never printed\n"}`,
			wantOut: "Step 2/2 : RUN false\n",
			wantErr: "The command '/bin/sh -c false' returned a non-zero code: 1",
		},
		{
			name: "pull progress: status lines, no byte counts",
			stream: `{"status":"Pulling from library/debian","id":"bookworm-slim"}
{"status":"Downloading","progressDetail":{"current":100,"total":1000},"id":"abc"}
{"status":"Pull complete","progressDetail":{},"id":"abc"}`,
			wantOut: "bookworm-slim: Pulling from library/debian\nabc: Pull complete\n",
		},
		{
			name:    "an import ends with the new image's Id",
			stream:  `{"status":"sha256:9f8e7d"}`,
			wantOut: "sha256:9f8e7d\n",
			wantID:  "sha256:9f8e7d",
		},
		{
			name:    "a broken stream is an error",
			stream:  `{"stream":"ok\n"} {"stream":`,
			wantOut: "ok\n",
			wantErr: "read progress",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			res, err := copyProgress(strings.NewReader(tt.stream), &out)
			if out.String() != tt.wantOut {
				t.Errorf("output = %q, want %q", out.String(), tt.wantOut)
			}
			if res.ID != tt.wantID {
				t.Errorf("ID = %q, want %q", res.ID, tt.wantID)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error = %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
			// Only a failure the daemon reported is ErrStreamFailed; a
			// stream that cannot be read is something else.
			wantFailed := tt.wantErr != "" && tt.wantErr != "read progress"
			if got := errors.Is(err, ErrStreamFailed); got != wantFailed {
				t.Errorf("errors.Is(%v, ErrStreamFailed) = %v, want %v", err, got, wantFailed)
			}
		})
	}
}

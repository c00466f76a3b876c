// Command starlark-runtime runs Starlark reducers for lib/sandbox. It is built for
// GOOS=js GOARCH=wasm (build.ts) and started by the sandbox's Starlark worker, which gives it a
// file system that carries nothing but frames: requests on stdin, answers on stdout, and the
// Go runtime's own fatal messages on stderr. It makes no other host call.
//
// Frames on stdin are a header line of space-separated fields ending in the payload length,
// then the payload:
//
//	load <max_steps> <len>\n<the .star source>
//	call <max_steps> <handler> <len>\n<the request as JSON>
//
// Each is answered on stdout by one frame `<status> <len>\n<payload>`:
//
//	loaded 0                       the source loaded; its globals are frozen
//	answered <len>  <JSON>         the handler's return value
//	threw <len>     <message>      the reducer's own code failed (a Starlark error or fail())
//	unavailable <len> <code>: <detail>   the reducer cannot answer (see lib/sandbox/limits.ts)
//
// A `call` before a successful `load` is answered `unavailable`. JSON maps to Starlark and
// back exactly: objects are dicts in text order, arrays lists, strings strings, numbers
// without a fraction or exponent ints (of any size), other numbers floats, true/false bools,
// null None. A response holding anything else, a non-string dict key, a non-finite float, a
// string that is not UTF-8 or an int the host would read back as a different number is
// refused (`threw`). Seed: agent-run-contracts, "The reducer contract"; lib/sandbox/README.md.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkjson"
)

// The one module a reducer may load: load("json.star", "json").
const jsonModule = "json.star"

// A loaded reducer: the frozen globals of its source.
var globals starlark.StringDict

func main() {
	maxStack := flag.Int("max-stack", 1<<20, "largest goroutine stack in bytes")
	memoryLimit := flag.Int64("memory-limit", 64<<20, "soft limit of the Go heap in bytes")
	flag.Parse()
	debug.SetMaxStack(*maxStack)
	debug.SetMemoryLimit(*memoryLimit)
	resolve.AllowSet = true

	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		fields, payload, err := readFrame(in)
		if err == io.EOF {
			return
		}
		status, body := "unavailable", []byte("sandbox_fault: "+fmt.Sprint(err))
		if err == nil {
			status, body = serve(fields, payload)
		}
		fmt.Fprintf(out, "%s %d\n", status, len(body))
		out.Write(body)
		out.Flush()
	}
}

// readFrame reads one header line and its payload.
func readFrame(in *bufio.Reader) ([]string, []byte, error) {
	line, err := in.ReadString('\n')
	if err != nil {
		if err == io.EOF && line == "" {
			return nil, nil, io.EOF
		}
		return nil, nil, err
	}
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return nil, nil, fmt.Errorf("malformed frame header %q", line)
	}
	size, err := strconv.Atoi(fields[len(fields)-1])
	if err != nil || size < 0 {
		return nil, nil, fmt.Errorf("malformed frame length in %q", line)
	}
	payload := make([]byte, size)
	if _, err := io.ReadFull(in, payload); err != nil {
		return nil, nil, err
	}
	return fields[:len(fields)-1], payload, nil
}

func serve(fields []string, payload []byte) (string, []byte) {
	steps, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil || steps == 0 {
		return unavailable("sandbox_fault", "malformed step budget "+fields[1])
	}
	switch {
	case fields[0] == "load" && len(fields) == 2:
		return load(payload, steps)
	case fields[0] == "call" && len(fields) == 3:
		return call(fields[2], payload, steps)
	}
	return unavailable("sandbox_fault", "unknown frame "+strings.Join(fields, " "))
}

func newThread(name string, steps uint64) *starlark.Thread {
	thread := &starlark.Thread{
		Name:  name,
		Print: func(*starlark.Thread, string) {},
		Load:  loadModule,
	}
	thread.SetMaxExecutionSteps(steps)
	return thread
}

// loadModule provides json.star and refuses every other module.
func loadModule(_ *starlark.Thread, module string) (starlark.StringDict, error) {
	if module == jsonModule {
		return starlark.StringDict{"json": starlarkjson.Module}, nil
	}
	return nil, fmt.Errorf("the sandbox provides no module %q (only %q)", module, jsonModule)
}

func exhausted(thread *starlark.Thread, steps uint64) bool {
	return thread.ExecutionSteps() >= steps
}

func load(source []byte, steps uint64) (string, []byte) {
	if !utf8.Valid(source) {
		return unavailable("artifact_invalid", "the Starlark artifact is not UTF-8")
	}
	thread := newThread("load", steps)
	loaded, err := starlark.ExecFile(thread, "reducer.star", source, nil)
	if err != nil {
		if exhausted(thread, steps) {
			return unavailable("steps_exhausted", fmt.Sprintf("loading the module ran past %d steps", steps))
		}
		return unavailable("artifact_invalid", err.Error())
	}
	globals = loaded
	return "loaded", nil
}

func call(handler string, request []byte, steps uint64) (string, []byte) {
	if globals == nil {
		return unavailable("sandbox_fault", "call before load")
	}
	fn, ok := globals[handler].(starlark.Callable)
	if !ok {
		return unavailable("handler_missing", fmt.Sprintf("the module defines no function named %q", handler))
	}
	if f, isDef := fn.(*starlark.Function); isDef && f.NumParams()-f.NumKwonlyParams() < 1 && !f.HasVarargs() {
		return unavailable("handler_missing", fmt.Sprintf("%s must take the request as its first parameter", handler))
	}
	decoded, err := starlark.Call(newThread("decode", math.MaxUint64), starlarkjson.Module.Members["decode"],
		starlark.Tuple{starlark.String(request)}, nil)
	if err != nil {
		return unavailable("request_not_json", err.Error())
	}
	thread := newThread("reduce", steps)
	result, err := starlark.Call(thread, fn, starlark.Tuple{decoded}, nil)
	if err != nil {
		if exhausted(thread, steps) {
			return unavailable("steps_exhausted", fmt.Sprintf("the reducer ran past %d steps", steps))
		}
		var evalError *starlark.EvalError
		if errors.As(err, &evalError) {
			return "threw", []byte(evalError.Msg)
		}
		return "threw", []byte(err.Error())
	}
	var buf bytes.Buffer
	if err := encode(&buf, result); err != nil {
		return "threw", []byte("the response cannot be written as JSON: " + err.Error())
	}
	return "answered", buf.Bytes()
}

func unavailable(code, detail string) (string, []byte) {
	return "unavailable", []byte(code + ": " + detail)
}

// encode writes x as JSON, dicts in insertion order. Tuples are written as arrays.
func encode(buf *bytes.Buffer, x starlark.Value) error {
	switch x := x.(type) {
	case starlark.NoneType:
		buf.WriteString("null")
	case starlark.Bool:
		buf.WriteString(strconv.FormatBool(bool(x)))
	case starlark.Int:
		return encodeInt(buf, x)
	case starlark.Float:
		f := float64(x)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("the float %v has no JSON form", x)
		}
		buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case starlark.String:
		return encodeString(buf, string(x))
	case *starlark.Dict:
		buf.WriteByte('{')
		for i, item := range x.Items() {
			key, ok := item[0].(starlark.String)
			if !ok {
				return fmt.Errorf("a dict key is %s %s, not a string", item[0].Type(), item[0])
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeString(buf, string(key)); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encode(buf, item[1]); err != nil {
				return fmt.Errorf("at key %s: %w", key, err)
			}
		}
		buf.WriteByte('}')
	case starlark.Indexable:
		if _, isList := x.(*starlark.List); !isList {
			if _, isTuple := x.(starlark.Tuple); !isTuple {
				return fmt.Errorf("a %s has no JSON form", x.Type())
			}
		}
		buf.WriteByte('[')
		for i := 0; i < x.Len(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, x.Index(i)); err != nil {
				return fmt.Errorf("at index %d: %w", i, err)
			}
		}
		buf.WriteByte(']')
	default:
		return fmt.Errorf("a %s has no JSON form", x.Type())
	}
	return nil
}

// encodeInt writes an int the host reads back without loss: every int of magnitude up to 2^53,
// and a larger one only when the double nearest to it is the int itself (2^60) or prints as
// the int's own digits (12345678901234567000, as canonical JSON writes that double).
func encodeInt(buf *bytes.Buffer, x starlark.Int) error {
	text := x.String()
	if small, ok := x.Int64(); ok && small >= -(1<<53) && small <= 1<<53 {
		buf.WriteString(text)
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return fmt.Errorf("the int %s is too large for a JSON number (a double)", text)
	}
	exact, _ := new(big.Float).SetFloat64(f).Int(nil)
	if exact.Cmp(x.BigInt()) != 0 && strconv.FormatFloat(f, 'f', -1, 64) != text {
		return fmt.Errorf("the int %s would be read back as %s (a JSON number is a double)", text,
			strconv.FormatFloat(f, 'f', -1, 64))
	}
	buf.WriteString(text)
	return nil
}

// encodeString writes s as a JSON string, escaping only what JSON requires. s must be UTF-8.
func encodeString(buf *bytes.Buffer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("the string %q is not UTF-8", s)
	}
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case c == '\n':
			buf.WriteString(`\n`)
		case c == '\r':
			buf.WriteString(`\r`)
		case c == '\t':
			buf.WriteString(`\t`)
		case c < 0x20:
			fmt.Fprintf(buf, `\u%04x`, c)
		default:
			buf.WriteByte(c)
		}
	}
	buf.WriteByte('"')
	return nil
}

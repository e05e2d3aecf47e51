package app

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcService is the upstream's TestService: unary echo (or a status with
// details, or a wait for the deadline), a server stream of as many
// messages as the request asks for, a client stream that sums its
// payloads, and a bidirectional echo.
type grpcService struct {
	testpb.UnimplementedTestServiceServer
	deadlines chan time.Duration // the deadline each waiting call saw
}

func (s *grpcService) UnaryCall(ctx context.Context, in *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	switch string(in.GetPayload().GetBody()) {
	case "fail":
		st, _ := status.New(codes.InvalidArgument, "the upstream refuses").
			WithDetails(&errdetails.ErrorInfo{Reason: "BAD_INPUT", Domain: "gale.test"})
		return nil, st.Err()
	case "wait":
		d, ok := ctx.Deadline()
		if !ok {
			s.deadlines <- 0
			return nil, status.Error(codes.Internal, "no deadline reached the upstream")
		}
		s.deadlines <- time.Until(d)
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	md, _ := metadata.FromIncomingContext(ctx)
	_ = grpc.SetTrailer(ctx, metadata.Pairs("x-trailer", "t1", "x-got", strings.Join(md.Get("x-sent"), ",")))
	return &testpb.SimpleResponse{Payload: in.GetPayload()}, nil
}

func (s *grpcService) StreamingOutputCall(in *testpb.StreamingOutputCallRequest, st grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	for i, p := range in.GetResponseParameters() {
		body := []byte(fmt.Sprintf("%06d", i))
		if n := int(p.GetSize()); n > len(body) {
			body = append(body, make([]byte, n-len(body))...)
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: body}}); err != nil {
			return err
		}
	}
	return nil
}

func (s *grpcService) StreamingInputCall(st grpc.ClientStreamingServer[testpb.StreamingInputCallRequest, testpb.StreamingInputCallResponse]) error {
	total := 0
	for {
		in, err := st.Recv()
		if err == io.EOF {
			return st.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(total)})
		}
		if err != nil {
			return err
		}
		total += len(in.GetPayload().GetBody())
	}
}

func (s *grpcService) FullDuplexCall(st grpc.BidiStreamingServer[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse]) error {
	for {
		in, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := st.Send(&testpb.StreamingOutputCallResponse{Payload: in.GetPayload()}); err != nil {
			return err
		}
	}
}

// grpcUpstream serves grpcService over h2c on 127.0.0.1.
func grpcUpstream(t *testing.T) (string, *grpcService) {
	return grpcUpstreamOver(t, nil)
}

// grpcUpstreamOver serves grpcService on 127.0.0.1 over TLS with cert
// (h2 by ALPN), or over h2c when cert is nil.
func grpcUpstreamOver(t *testing.T, cert *tls.Certificate) (string, *grpcService) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &grpcService{deadlines: make(chan time.Duration, 4)}
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
	}
	s := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(s, svc)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String(), svc
}

// TestGRPCThroughProxy runs gRPC calls with grpc-go's client through gale
// to a grpc-go server behind an h2c proxy route, over TLS (h2) and over
// h2c: unary calls with metadata and trailers, a status with details, a
// server stream of 10,000 messages, a client stream, a bidirectional
// stream, and a deadline that expires at the upstream.
func TestGRPCThroughProxy(t *testing.T) {
	t.Parallel()
	up, svc := grpcUpstream(t)
	ts := startTLSServer(t, `listen:
  - {address: "127.0.0.1:0", tls: {certificates: [$CERT]}}
  - "127.0.0.1:0"
routes:
  - path: /
    proxy: {to: ["`+up+`"], protocol: h2c}
`, nil, nil)
	creds := map[string]grpc.DialOption{
		"tls": grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ts.ca.pool, ServerName: "localhost"})),
		"h2c": grpc.WithTransportCredentials(insecure.NewCredentials()),
	}
	addrs := map[string]string{"tls": ts.tlsAddr, "h2c": ts.srv.Addrs()[1]}
	for name, cred := range creds {
		grpcCases(t, name, addrs[name], cred, svc)
	}
}

// grpcCases runs the calls of TestGRPCThroughProxy through gale at addr,
// reached with cred, to svc behind it.
func grpcCases(t *testing.T, name, addr string, cred grpc.DialOption, svc *grpcService) {
	{
		cc, err := grpc.NewClient(addr, cred)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		c := testpb.NewTestServiceClient(cc)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		var trailer metadata.MD
		out, err := c.UnaryCall(metadata.AppendToOutgoingContext(ctx, "x-sent", "s1"),
			&testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("hello")}}, grpc.Trailer(&trailer))
		if err != nil || string(out.GetPayload().GetBody()) != "hello" ||
			strings.Join(trailer.Get("x-trailer"), ",") != "t1" || strings.Join(trailer.Get("x-got"), ",") != "s1" {
			t.Fatalf("%s: unary: %v %q trailer %v", name, err, out.GetPayload().GetBody(), trailer)
		}

		_, err = c.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("fail")}})
		st := status.Convert(err)
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if e, ok := d.(*errdetails.ErrorInfo); ok {
				info = e
			}
		}
		if st.Code() != codes.InvalidArgument || st.Message() != "the upstream refuses" || info == nil || info.Reason != "BAD_INPUT" {
			t.Errorf("%s: status with details: %v, details %v", name, st, st.Details())
		}

		params := make([]*testpb.ResponseParameters, 10000)
		for i := range params {
			params[i] = &testpb.ResponseParameters{Size: 100}
		}
		stream, err := c.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: params})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			m, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: server stream after %d: %v", name, n, err)
			}
			if got := string(m.GetPayload().GetBody()[:6]); got != fmt.Sprintf("%06d", n) {
				t.Fatalf("%s: message %d is %q", name, n, got)
			}
			n++
		}
		if n != 10000 {
			t.Errorf("%s: server stream: %d messages, want 10000", name, n)
		}

		cs, err := c.StreamingInputCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if err := cs.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 1000)}}); err != nil {
				t.Fatalf("%s: client stream send %d: %v", name, i, err)
			}
		}
		sum, err := cs.CloseAndRecv()
		if err != nil || sum.GetAggregatedPayloadSize() != 100000 {
			t.Errorf("%s: client stream: %v %d", name, err, sum.GetAggregatedPayloadSize())
		}

		bidi, err := c.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			msg := fmt.Sprintf("ping %d", i)
			if err := bidi.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(msg)}}); err != nil {
				t.Fatal(err)
			}
			m, err := bidi.Recv()
			if err != nil || string(m.GetPayload().GetBody()) != msg {
				t.Fatalf("%s: bidi %d: %v %q", name, i, err, m.GetPayload().GetBody())
			}
		}
		_ = bidi.CloseSend()
		if _, err := bidi.Recv(); err != io.EOF {
			t.Errorf("%s: bidi end: %v", name, err)
		}

		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err = c.UnaryCall(dctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte("wait")}})
		dcancel()
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("%s: deadline: %v", name, err)
		}
		select {
		case d := <-svc.deadlines:
			if d <= 0 || d > 500*time.Millisecond {
				t.Errorf("%s: the upstream saw a deadline %v away, want within 500ms", name, d)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s: the waiting call never reached the upstream", name)
		}
	}
}

// h2cUpstream serves h over HTTP/2 cleartext (prior knowledge) with
// net/http, and returns its address.
func h2cUpstream(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestH2CUpstream: an h2c route forwards a request's trailers and body and
// relays the response's trailers; a safe request that cannot reach the
// first upstream is tried on the next; round robin spreads requests.
func TestH2CUpstream(t *testing.T) {
	t.Parallel()
	var ups []string
	for i := 0; i < 2; i++ {
		i := i
		ups = append(ups, h2cUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("Trailer", "X-Sum, Set-Cookie, Location")
			w.Header().Set("X-Up", fmt.Sprint(i))
			fmt.Fprintf(w, "%s %s %d te=%s trailer=%s auth=%q", r.Proto, r.URL.Path, len(body), r.Header.Get("Te"), r.Trailer.Get("X-Checksum"), r.Trailer.Get("Authorization"))
			w.Header().Set("X-Sum", fmt.Sprint(len(body)))
			w.Header().Set("Set-Cookie", "session=upstream")
			w.Header().Set("Location", "/elsewhere")
		})))
	}
	ts := startServer(t, `listen: ["127.0.0.1:0"]
routes:
  - path: /t/
    proxy: {to: ["`+ups[0]+`"], protocol: h2c}
  - path: /
    proxy: {to: ["`+deadAddr(t)+`", "`+ups[0]+`", "`+ups[1]+`"], protocol: h2c, retries: 2}
`, nil)
	c := h2cClient(t)
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", ts.url("/t/up"), pr)
	// A trailer must not carry what the head's checks judged (RFC 9110
	// section 6.5.1): an Authorization sent as a trailer, or a
	// Set-Cookie or Location coming back as one, is dropped.
	req.Trailer = http.Header{"X-Checksum": nil, "Authorization": nil}
	req.Header.Set("Te", "trailers")
	go func() {
		_, _ = pw.Write([]byte(strings.Repeat("x", 100000)))
		req.Trailer.Set("X-Checksum", "abc")
		req.Trailer.Set("Authorization", "Basic YWRtaW46YWRtaW4=")
		_ = pw.Close()
	}()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), `HTTP/2.0 /t/up 100000 te=trailers trailer=abc auth=""`) || resp.Trailer.Get("X-Sum") != "100000" ||
		resp.Trailer.Get("Set-Cookie") != "" || resp.Trailer.Get("Location") != "" {
		t.Fatalf("%d %q trailer %v", resp.StatusCode, body, resp.Trailer)
	}
	seen := map[string]int{}
	for i := 0; i < 20; i++ {
		resp, err := c.Get(ts.url("/get"))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %d: %d", i, resp.StatusCode)
		}
		seen[resp.Header.Get("X-Up")]++
	}
	if seen["0"] == 0 || seen["1"] == 0 {
		t.Errorf("answers by upstream %v, want both", seen)
	}
}

// TestGRPCOverTLSUpstream runs the same calls through a protocol: h2
// route, whose upstream is a grpc-go server over TLS (ALPN h2), verified
// against its CA.
func TestGRPCOverTLSUpstream(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(dir, "upstream", "grpc.internal")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "upstream.pem"), filepath.Join(dir, "upstream.key"))
	if err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "ca.pem"), ca.rootPEM)
	up, svc := grpcUpstreamOver(t, &cert)
	ts := runServer(t, writeConfig(t, dir, `listen: ["127.0.0.1:0"]
routes:
  - path: /
    proxy: {to: ["https://`+up+`"], protocol: h2, tls: {server_name: grpc.internal, ca: ca.pem}}
`), dir)
	grpcCases(t, "h2 upstream", ts.srv.Addrs()[0], grpc.WithTransportCredentials(insecure.NewCredentials()), svc)
}

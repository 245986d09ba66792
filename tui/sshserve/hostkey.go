package sshserve

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	gossh "golang.org/x/crypto/ssh"
)

// HostKey returns the server's private host key (PEM) from path, making
// an ed25519 key there first when there is none: the key (mode 0600) and
// any directory made for it (0700). The same key on every start is what
// lets clients recognise the server. A key file others may read, or one
// that is not a private key, is refused.
func HostKey(path string) ([]byte, error) {
	data, err := readHostKey(path)
	if err == nil {
		return data, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("make the host key's directory: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate host key: %w", err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "dirtywork host key")
	if err != nil {
		return nil, fmt.Errorf("encode host key: %w", err)
	}
	data = pem.EncodeToMemory(block)
	// O_EXCL: two servers starting at once must not overwrite each other's
	// key; the loser reads the winner's.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readHostKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("write host key: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, fmt.Errorf("write host key: %w", err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("write host key: %w", err)
	}
	return data, nil
}

func readHostKey(path string) ([]byte, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("host key %s is not a regular file", path)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("host key %s may be read by others (mode %04o); make it 0600", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read host key: %w", err)
	}
	if _, err := gossh.ParsePrivateKey(data); err != nil {
		return nil, fmt.Errorf("host key %s: not an unencrypted private key: %w", path, err)
	}
	return data, nil
}

// Fingerprint is the SHA256 fingerprint of a host key's public half, as
// ssh shows it when it first meets the server.
func Fingerprint(hostKeyPEM []byte) (string, error) {
	s, err := gossh.ParsePrivateKey(hostKeyPEM)
	if err != nil {
		return "", fmt.Errorf("parse host key: %w", err)
	}
	return gossh.FingerprintSHA256(s.PublicKey()), nil
}

func gosshFingerprint(k gossh.PublicKey) string { return gossh.FingerprintSHA256(k) }

/* TLS through OpenSSL. Verification is on by default: the chain against the
 * CAs, and the server's name with SSL_set1_host, which also matches IP
 * addresses (X509_VERIFY_PARAM_set1_host does not, and falls back to the
 * CN). See tls.h. */
#include "tls.h"

#include "conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

static int context_error(SSL_CTX *ctx, char *why, size_t why_len, const char *what)
{
    unsigned long e = ERR_get_error();
    snprintf(why, why_len, "TLS: %s: %s", what, e ? ERR_reason_error_string(e) : "failed");
    ERR_clear_error();
    SSL_CTX_free(ctx);
    return DLOCK_ETLS;
}

int dlock__tls_context_new(SSL_CTX **out, const dlock_client_options *o, char *why,
                           size_t why_len)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return DLOCK_ENOMEM;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, o->tls_insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (o->tls_ca_file || o->tls_ca_dir) {
        if (SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir) != 1)
            return context_error(ctx, why, why_len, "cannot load the CA certificates");
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return context_error(ctx, why, why_len, "cannot load the system's CA certificates");
    }
    if (o->tls_cert_file &&
        SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file) != 1)
        return context_error(ctx, why, why_len, "cannot load the client certificate");
    if (o->tls_key_file &&
        SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM) != 1)
        return context_error(ctx, why, why_len, "cannot load the client key");
    if (o->tls_cert_file && o->tls_key_file && SSL_CTX_check_private_key(ctx) != 1)
        return context_error(ctx, why, why_len, "the client key does not match its certificate");
    *out = ctx;
    return 0;
}

void dlock__tls_context_free(SSL_CTX *ctx)
{
    SSL_CTX_free(ctx);
}

static int is_ip_address(const char *name)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, buf) == 1 || inet_pton(AF_INET6, name, buf) == 1;
}

int dlock__tls_open(dlock__conn *c)
{
    const char *name = c->tls_name ? c->tls_name : c->ep->host;
    SSL *ssl = SSL_new(c->tls_ctx);
    if (!ssl || SSL_set_fd(ssl, c->fd) != 1) {
        SSL_free(ssl);
        snprintf(c->err, sizeof(c->err), "%s: TLS: cannot start", c->ep->label);
        return DLOCK_ETLS;
    }
    /* SNI carries host names only; verification covers names and IPs. */
    if (!is_ip_address(name))
        SSL_set_tlsext_host_name(ssl, name);
    if (SSL_CTX_get_verify_mode(c->tls_ctx) != SSL_VERIFY_NONE && SSL_set1_host(ssl, name) != 1) {
        SSL_free(ssl);
        snprintf(c->err, sizeof(c->err), "%s: TLS: cannot set the name to verify", c->ep->label);
        return DLOCK_ETLS;
    }
    c->ssl = ssl;
    return 0;
}

/* Sets c->tls_wants after an SSL call returned `ret`; returns the SSL error. */
static int classify(dlock__conn *c, int ret)
{
    int e = SSL_get_error(c->ssl, ret);
    c->tls_wants = e == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
    return e;
}

int dlock__tls_handshake(dlock__conn *c)
{
    int ret = SSL_connect(c->ssl), e;
    long verify;
    if (ret == 1)
        return 1;
    e = classify(c, ret);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    verify = SSL_get_verify_result(c->ssl);
    if (verify != X509_V_OK)
        snprintf(c->err, sizeof(c->err), "%s: TLS: certificate verification failed: %s",
                 c->ep->label, X509_verify_cert_error_string(verify));
    else
        snprintf(c->err, sizeof(c->err), "%s: TLS handshake failed: %s", c->ep->label,
                 ERR_peek_error() ? ERR_reason_error_string(ERR_peek_error())
                 : e == SSL_ERROR_SYSCALL ? "connection closed"
                                          : "protocol error");
    ERR_clear_error();
    return DLOCK_ETLS;
}

static ssize_t result(dlock__conn *c, int ret, int eof_is_zero)
{
    int e, saved = errno;
    if (ret > 0)
        return ret;
    e = classify(c, ret);
    if (e == SSL_ERROR_SSL) {
        /* An alert, e.g. the server refusing our certificate after a TLS 1.3
         * handshake: say why, and let the caller report a TLS failure. */
        unsigned long err = ERR_peek_error();
        snprintf(c->err, sizeof(c->err), "%s: TLS: %s", c->ep->label,
                 err ? ERR_reason_error_string(err) : "protocol error");
    }
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN;
        return -1;
    }
    if (e == SSL_ERROR_ZERO_RETURN && eof_is_zero)
        return 0;
    errno = e == SSL_ERROR_SSL ? EPROTO : e == SSL_ERROR_SYSCALL && saved ? saved : ECONNRESET;
    return -1;
}

ssize_t dlock__tls_send(dlock__conn *c, const char *buf, size_t len)
{
    return result(c, SSL_write(c->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len)), 0);
}

ssize_t dlock__tls_recv(dlock__conn *c, char *buf, size_t len)
{
    return result(c, SSL_read(c->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len)), 1);
}

int dlock__tls_idle_ok(dlock__conn *c)
{
    char byte;
    int ret = SSL_peek(c->ssl, &byte, 1);
    int e = ret > 0 ? SSL_ERROR_NONE : SSL_get_error(c->ssl, ret);
    ERR_clear_error();
    return e == SSL_ERROR_WANT_READ;
}

void dlock__tls_close(dlock__conn *c)
{
    SSL_free(c->ssl);
    c->ssl = NULL;
}

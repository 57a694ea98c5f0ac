#!/usr/bin/env python3
"""Writes the committed seed corpora under fuzz/corpus/<target>/ (run from anywhere; idempotent).

Seeds are small, realistic inputs for each target, in each target's input layout (see the
doc comment at the top of each fuzz_targets/*.rs). The links and links_diff targets also start
from the HTML pages in src/links/testdata/, which are not copied here (see links() below).
"""
import gzip, hashlib, os, shutil, struct, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "corpus")
TESTDATA = os.path.join(ROOT, "..", "src", "links", "testdata")


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# ---------------------------------------------------------------- links
# The HTML pages (src/links/testdata/*.html, the unit tests' fixtures) are kept only there:
# .ci/run adds them to the links and links_diff corpora when it fuzzes. Only synthetic inputs
# that are not pages of their own are generated here.
LINKS_TARGETS = ("links", "links_diff")


def links():
    # Values at and just over MAX_VALUE_BYTES (8 KiB): also lifts libFuzzer's default max_len
    # past the bound, so the "dropped" path is reachable.
    long = ('<base href="/%s"><a href="/%s">ok</a><a href=/%s>dropped</a><a href="/z">z</a>'
            % ("b" * 8200, "k" * 8191, "d" * 8192))
    for t in LINKS_TARGETS:
        put(t, "long-values.html", long)
    # The testdata pages join these seeds in one directory: a seed must neither take a page's
    # name (one would overwrite the other) nor repeat a page's bytes.
    pages = {}
    for name in sorted(os.listdir(TESTDATA)):
        if name.endswith(".html"):
            with open(os.path.join(TESTDATA, name), "rb") as f:
                pages[name] = f.read()
    for t in LINKS_TARGETS:
        d = os.path.join(CORPUS, t)
        for name in sorted(os.listdir(d)):
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
            if name in pages or data in pages.values():
                raise SystemExit("fuzz/corpus/%s/%s duplicates a page of src/links/testdata/"
                                 % (t, name))


# ---------------------------------------------------------------- http_response
def gz(b):
    return gzip.compress(b, mtime=0)


def chunked(body, sizes):
    out, i = b"", 0
    for s in sizes:
        part = body[i:i + s]
        i += s
        if part:
            out += b"%x\r\n" % len(part) + part + b"\r\n"
    if i < len(body):
        out += b"%x\r\n" % (len(body) - i) + body[i:] + b"\r\n"
    return out + b"0\r\n"


PAGE = b"<html><body><a href=\"/next\">next</a></body></html>\n"
RESPONSES = {
    "length": b"HTTP/1.1 200 OK\r\nDate: Sat, 21 Nov 2026 06:00:00 GMT\r\nServer: nginx\r\n"
    b"Content-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n" % len(PAGE) + PAGE,
    "chunked": b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n"
    + chunked(PAGE, [10, 20]) + b"X-Trailer: yes\r\n\r\n",
    "chunked-ext": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
    b"5;name=value\r\nhello\r\n0\r\n\r\n",
    "gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
    % len(gz(PAGE)) + gz(PAGE),
    "gzip-chunked": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"
    b"Vary: Accept-Encoding\r\n\r\n" + chunked(gz(PAGE), [16]) + b"\r\n",
    "deflate": b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: %d\r\n\r\n"
    % len(zlib.compress(PAGE)) + zlib.compress(PAGE),
    "gzip-gzip": b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip, gzip\r\nContent-Length: %d\r\n\r\n"
    % len(gz(gz(PAGE))) + gz(gz(PAGE)),
    "continue": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "keepalive-pipelined": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\n"
    b"Content-Length: 9\r\nConnection: close\r\n\r\nnot found",
    "http10-close": b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until the peer closes\n",
    "http10-keepalive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc",
    "redirect": b"HTTP/1.1 301 Moved Permanently\r\nLocation: https://example.com/new\r\n"
    b"Content-Length: 0\r\n\r\n",
    "not-modified": b"HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\nContent-Length: 1234\r\n\r\n",
    "no-content": b"HTTP/1.1 204 No Content\r\n\r\n",
    "obs-fold": b"HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\nContent-Length: 1\r\n\r\nx",
    "te-and-cl": b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\nabc\r\n0\r\n\r\n",
    "cl-list": b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc",
    "bad-status": b"HTTP/1.1 2x0 OK\r\n\r\n",
    "lf-only": b"HTTP/1.1 200 OK\nContent-Length: 2\n\nhi",
}


def http():
    for name, resp in RESPONSES.items():
        put("http_response", name, b"\x00\x00" + resp)  # default limits, whole
        put("http_response", name + "-split", b"\x00\x03\x00\x06\x2f" + resp)
        put("http_response", name + "-tight", b"\x01\x02\x00\x0f" + resp)
    put("http_response", "head-request", b"\x02\x00" + RESPONSES["length"][: -len(PAGE)])


# ---------------------------------------------------------------- dns_response
ID = 0x1234


def qname(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\x00"


def header(flags, an, ns=0, ar=0, qd=1, id_=ID):
    return struct.pack(">HHHHHH", id_, flags, qd, an, ns, ar)


def question(name="www.example.com", qtype=1):
    return qname(name) + struct.pack(">HH", qtype, 1)


def rr(owner, rtype, ttl, rdata):
    return owner + struct.pack(">HHIH", rtype, 1, ttl, len(rdata)) + rdata


PTR_Q = b"\xc0\x0c"  # a compression pointer to the question name
OK = 0x8180  # QR, RD, RA, NOERROR


def dns():
    q = question()
    put("dns_response", "a", header(OK, 2) + q
        + rr(PTR_Q, 1, 300, bytes([93, 184, 215, 14])) + rr(PTR_Q, 1, 300, bytes([93, 184, 215, 15])))
    put("dns_response", "a-uncompressed", header(OK, 1) + q
        + rr(qname("www.example.com"), 1, 60, bytes([192, 0, 2, 1])))
    put("dns_response", "aaaa", header(OK, 1) + question(qtype=28)
        + rr(PTR_Q, 28, 3600, bytes.fromhex("2606280000220001024800931c0e0000")))
    # www -> cdn.example.net -> edge.cdn.example.net (A); the targets use pointers into the
    # packet: "example.net" is written once and pointed at.
    q_len = 12 + len(q)
    c1 = b"\x03cdn\x07example\x03net\x00"
    first = rr(PTR_Q, 5, 120, c1)
    cdn_at = q_len + len(first) - len(c1)
    ptr_cdn = struct.pack(">H", 0xC000 | cdn_at)
    c2 = b"\x04edge" + ptr_cdn
    second = rr(ptr_cdn, 5, 60, c2)
    edge_at = q_len + len(first) + len(second) - len(c2)
    third = rr(struct.pack(">H", 0xC000 | edge_at), 1, 20, bytes([198, 51, 100, 7]))
    put("dns_response", "cname-chain", header(OK, 3) + q + first + second + third)
    put("dns_response", "cname-only", header(OK, 1) + q + first)
    put("dns_response", "cname-loop", header(OK, 2) + q
        + rr(PTR_Q, 5, 60, qname("a.example.com")) + rr(qname("a.example.com"), 5, 60, PTR_Q))
    soa = (qname("ns1.example.com") + qname("hostmaster.example.com")
           + struct.pack(">IIIII", 2024010101, 7200, 3600, 1209600, 300))
    put("dns_response", "nxdomain", header(0x8183, 0, ns=1) + q
        + rr(b"\xc0\x10", 6, 300, soa))
    put("dns_response", "nodata", header(OK, 0, ns=1) + q + rr(b"\xc0\x10", 6, 300, soa))
    put("dns_response", "servfail", header(0x8182, 0) + q)
    put("dns_response", "refused", header(0x8185, 0) + q)
    put("dns_response", "truncated", header(0x8380, 0) + q)
    put("dns_response", "txt-and-a", header(OK, 2, ar=1) + q
        + rr(PTR_Q, 16, 300, b"\x0bv=spf1 -all") + rr(PTR_Q, 1, 300, bytes([10, 0, 0, 1]))
        + b"\x00" + struct.pack(">HHIH", 41, 1232, 0, 0))  # OPT pseudo-record
    put("dns_response", "pointer-loop", header(OK, 1) + q + rr(b"\xc0\x00", 1, 1, b"\x01\x02\x03\x04")
        [:0] + b"\xc0" + bytes([q_len]) + struct.pack(">HHIH", 1, 1, 1, 4) + b"\x01\x02\x03\x04")
    # Over MAX_RESPONSE_LEN (16 KiB): also lifts libFuzzer's default max_len past it.
    put("dns_response", "oversized", header(OK, 1) + q + rr(PTR_Q, 1, 60, bytes([192, 0, 2, 9]))
        + b"\x00" * 16400)
    put("dns_response", "wrong-id", header(OK, 1, id_=0x4321) + q + rr(PTR_Q, 1, 1, b"\x7f\x00\x00\x01"))
    # EDNS: 40 A records in one answer (> 512 bytes) with the server's OPT record; AAAA with
    # OPT; an extended RCODE (BADVERS); two OPT records; FORMERR from a server without EDNS;
    # truncated with records cut short (the TCP path).
    forty = b"".join(rr(PTR_Q, 1, 300, bytes([192, 0, 2, i])) for i in range(40))
    put("dns_response", "forty-a-edns", header(OK, 40, ar=1) + q + forty + opt())
    put("dns_response", "aaaa-edns", header(OK, 2, ar=1) + question(qtype=28)
        + rr(PTR_Q, 28, 60, bytes.fromhex("20010db8000000000000000000000001"))
        + rr(PTR_Q, 28, 60, bytes.fromhex("00000000000000000000000000000001")) + opt())
    put("dns_response", "opt-badvers", header(OK, 1, ar=1) + q
        + rr(PTR_Q, 1, 1, b"\x7f\x00\x00\x01") + opt(ext_rcode=1))
    put("dns_response", "two-opts", header(OK, 1, ar=2) + q
        + rr(PTR_Q, 1, 1, b"\x7f\x00\x00\x01") + opt() + opt())
    put("dns_response", "formerr", header(0x8181, 0) + q)
    put("dns_response", "truncated-forty", header(0x8380, 20) + q + forty[:300])


def opt(udp=1232, ext_rcode=0):
    """An OPT pseudo-record (RFC 6891): root owner, CLASS = UDP size, TTL = extended RCODE."""
    return b"\x00" + struct.pack(">HHIH", 41, udp, ext_rcode << 24, 0)


# ---------------------------------------------------------------- dns_tcp_framing
def framed(msg):
    return struct.pack(">H", len(msg)) + msg


def dns_tcp():
    # Layout: bound / 64, cut seed, then the stream.
    a = header(OK, 1) + question() + rr(PTR_Q, 1, 60, bytes([192, 0, 2, 1]))
    put("dns_tcp_framing", "two-answers", bytes([8, 7]) + framed(a) + framed(a[:20]))
    put("dns_tcp_framing", "zero-length", bytes([1, 3]) + framed(b"") + framed(b"x") + b"\x00")
    put("dns_tcp_framing", "over-the-bound", bytes([1, 5]) + framed(a) + struct.pack(">H", 65) + b"y" * 65)
    put("dns_tcp_framing", "largest", bytes([255, 9]) + framed(b"\xab" * 16320) + b"\xff\xff")


# ---------------------------------------------------------------- robots
ROBOTS = {
    "google-style.txt": """# robots.txt for a large search-engine-like site
User-agent: *
Disallow: /search
Allow: /search/about
Allow: /search/static
Disallow: /sdch
Disallow: /groups
Disallow: /index.html?
Disallow: /?
Allow: /?hl=
Disallow: /?hl=*&
Allow: /?hl=*&gws_rd=ssl$
Disallow: /imgres
Disallow: /u/
Disallow: /preferences
Allow: /*.js$
Allow: /maps/reserve
Disallow: /maps?
Disallow: /*?*&amp;
Disallow: /shopping/product/

User-agent: AdsBot-Google
Disallow: /maps/api/js/

User-agent: Twitterbot
Allow: /imgres

Sitemap: https://www.example.com/sitemap.xml
""",
    "wikipedia-style.txt": """# Please note: There are a lot of pages on this site, and there are
# some misbehaved spiders out there that go _way_ too fast.
User-agent: MJ12bot
Disallow: /

User-agent: Mediapartners-Google*
Disallow: /

User-agent: IsraBot
Disallow:

User-agent: Orthogaffe
Disallow:

User-agent: UbiCrawler
Disallow: /

User-agent: DOC
Disallow: /

User-agent: Zao
Disallow: /

User-agent: sitecheck.internetseer.com
Disallow: /

User-agent: Zealbot
Disallow: /

User-agent: HTTrack
User-agent: wget
User-agent: WebZIP
Disallow: /

User-agent: *
Allow: /w/api.php?action=mobileview&
Allow: /w/load.php?
Allow: /api/rest_v1/?doc
Disallow: /w/
Disallow: /api/
Disallow: /trap/
Disallow: /wiki/Special:
Disallow: /wiki/Spezial:
Disallow: /wiki/%D8%AE%D8%A7%D8%B5:Search
Disallow: /wiki/Wikipedia:Articles_for_deletion/
Disallow: /wiki/Wikipedia%3AArticles_for_deletion/
Crawl-delay: 1
""",
    "ours.txt": """User-agent: spinneret/0.1
Disallow: /private/
Allow: /private/public-*.html$
Crawl-delay: 2.5

User-agent: *
Disallow: /
""",
    "wildcards.txt": "\ufeffuser-agent: *\r\ndisallow: /*.pdf$\r\ndisallow: /*/print/*\r\n"
    "allow: /docs/*/print/index.html\r\nDISALLOW: /tmp*\r\nallow: /$\r\n"
    "disallow: /a%2fb\r\ndisallow: /%7Euser\r\ndisallow: /ü/\r\ncrawl-delay: 10\r\n",
    "crlf-and-junk.txt": "User-agent spinneret\nDisallow /no-colon\nuser-agent:\tspinneret\n"
    "disallow:   /x   # trailing comment\nallow:\nsitemap: /s.xml\n<html>oops</html>\n",
}


def robots():
    for name, body in ROBOTS.items():
        put("robots", name, body)
    put("robots", "partial-bom.txt", b"\xef\xbbUser-agent: *\nDisallow: /x\n")
    # Patterns just over MAX_PATTERN_BYTES (16 KiB): a Disallow that is cut to a prefix and an
    # Allow that is dropped. Also lifts libFuzzer's default max_len past the bound.
    put("robots", "long-patterns.txt", "User-agent: *\nDisallow: /%s*x$\nAllow: /%s\n"
        % ("a" * 16400, "a" * 16390))


# ---------------------------------------------------------------- urlnorm
HREFS = [
    "/a/b/../c/./d?x=1#frag", "../up", "page2.html", "?only=query", "#only-frag",
    "//cdn.example.net/lib.js", "HTTPS://WWW.Example.COM:443/Path", "http://example.com:80/",
    "http://user:pass@example.com/", "http://[2001:db8::1]:8080/x", "http://192.168.000.001/",
    "http://0x7f.1/", "https://bücher.example/straße?q=ä", "http://xn--nxasmq6b.example/",
    "  \t/trim me\n ", "javascript:alert(1)", "mailto:a@b.c", "data:text/html,<a>", "ftp://x/",
    "http:///nohost", "http://", "http://exa mple.com/", "http://example.com/%zz%41",
    "/a//b///c", "/a/%2e%2E/b", "http://example.com/a?b=c&d=e&f", "\\\\server\\share",
    "http:\\\\example.com\\a", "http://example.com/\x01ctl", "/" + "a/" * 40,
    "http://localhost:65536/", "http://example.com./", "HTTP://EXAMPLE.COM/%7euser/",
]


def urlnorm():
    for i, h in enumerate(HREFS):
        put("urlnorm", "href-%02d" % i, h.encode("utf-8", "surrogateescape"))
    put("urlnorm", "href-invalid-utf8", b"/caf\xe9?q=\xff\xfe")


# ---------------------------------------------------------------- warc_roundtrip
def warc_record(rtype, uri, block, rid):
    head = ("WARC/1.1\r\nWARC-Type: %s\r\nWARC-Record-ID: <urn:uuid:%s>\r\n"
            "WARC-Date: 2026-11-21T06:00:00Z\r\nWARC-Target-URI: %s\r\n"
            "Content-Type: application/http;msgtype=%s\r\nContent-Length: %d\r\n"
            "WARC-Block-Digest: md5:%s\r\n\r\n" % (
                rtype, rid, uri, rtype, len(block),
                __import__("base64").b32encode(hashlib.md5(block).digest()).decode()))
    return head.encode() + block + b"\r\n\r\n"


def warc():
    date = struct.pack(">Q", 1795240484)[3:]
    put("warc_roundtrip", "simple", b"\x00" + date + b"http://example.com/\x00" + RESPONSES["length"])
    put("warc_roundtrip", "writer", b"\x33" + date + b"https://example.com/a?b=c\x00"
        + b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n\x00" + RESPONSES["chunked"])
    put("warc_roundtrip", "ctl-uri", b"\x01" + date + b" http://e.com/\r\nX: y \x00\x00\x00")
    req = b"GET / HTTP/1.1\r\nHost: example.com\r\nUser-Agent: spinneret/0.1\r\n\r\n"
    members = b"".join(gz(warc_record(t, "http://example.com/", b, "%08d-0000-4000-8000-000000000000" % i))
                       for i, (t, b) in enumerate([("request", req), ("response", RESPONSES["gzip"])]))
    put("warc_roundtrip", "file.warc.gz", members)


# ---------------------------------------------------------------- url_seen_diff
def url_seen():
    put("url_seen_diff", "small", bytes([0, 5, 0, 7, 1, 5, 1, 6, 0, 5, 4, 255, 5, 255]))
    put("url_seen_diff", "runs", bytes([12, 1, 0, 255, 12, 1, 0, 200, 13, 0, 1, 0, 3, 0, 1]) * 4)
    put("url_seen_diff", "wide", b"".join(bytes([2]) + struct.pack("<Q", (i * 0x9E3779B97F4A7C15) % 2**64)
                                          + bytes([3]) + struct.pack("<Q", (i * 7919) % 2**64)
                                          for i in range(300)))


# ---------------------------------------------------------------- auth_challenges
def auth_challenges():
    # WWW-Authenticate values (RFC 7616 section 3.9.1's, several in one field, a token68) and
    # a request head with credentials (see fuzz_targets/auth_challenges.rs).
    put("auth_challenges", "rfc7616", 'Digest realm="http-auth@example.org", qop="auth, auth-int", '
        'algorithm=SHA-256, nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
        'opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"')
    put("auth_challenges", "several", 'Newauth realm="apps", type=1, title="Login to \\"apps\\"", '
        'Basic realm="simple", Negotiate abc+/==, Digest realm="r", nonce="n", stale=true')
    put("auth_challenges", "request", "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Basic QWxh\r\n"
        "Proxy-Authorization: Digest x\r\n\r\n")


# ---------------------------------------------------------------- cookies
def cookies():
    # Lines: an origin-picking byte, then a Set-Cookie value (see fuzz_targets/cookies.rs).
    lines = [
        b"\x00sid=abc123; Path=/; Max-Age=31536000",
        b"\x00pref=dark mode; Domain=.example.com; Path=/; Expires=Wed, 01 Jan 2098 00:00:00 GMT",
        b"\x01cart=42; Path=/a; Secure; HttpOnly",
        b"\x02gh=1; Domain=github.io",
        b"\x03uk=1; Domain=co.uk",
        b"\x04ip=1; Max-Age=0",
        b"\x05a=1; Expires=Sunday, 06-Nov-94 08:49:37 GMT",
        b"\x00sid=; Max-Age=-1",
    ]
    put("cookies", "set-cookies", b"\n".join(lines))
    # What wget --save-cookies writes (src/http/cookies/testdata), and curl's extras.
    with open(os.path.join(ROOT, "..", "src", "http", "cookies", "testdata", "wget-cookies.txt"), "rb") as f:
        put("cookies", "wget-cookies.txt", f.read())
    put("cookies", "curl-cookies.txt", "# Netscape HTTP Cookie File\n"
        "#HttpOnly_.example.com\tTRUE\t/\tTRUE\t0\ts\tv\n[::1]:8080\tFALSE\t/\tFALSE\t0\tv6\t1\n")
    put("cookies", "retry-after", "Sun Nov  6 08:49:37 1994")


# ---------------------------------------------------------------- sitemap_feed
# Input: a form byte (bit 0: the target gzips the rest; bit 1: named by robots.txt; bit 2: one
# index deep), then the body. Bodies that are already gzip are sent with bit 0 clear.
SM_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
SITEMAPS = {
    "urlset": '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="%s" '
              'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
              '<url><loc>http://s.example/maps/a?x=1&amp;y=2</loc><lastmod>2005-01-01</lastmod>'
              '<changefreq>monthly</changefreq><priority>0.8</priority>'
              '<image:image><image:loc>http://s.example/i.png</image:loc></image:image></url>\n'
              '<url><loc><![CDATA[http://s.example/maps/b?q=<1>]]></loc>'
              '<lastmod>2004-12-23T18:00:15+00:00</lastmod><priority>1.5</priority></url>\n'
              '<url><loc>http://s.example/elsewhere</loc></url>\n</urlset>\n' % SM_NS,
    "index": '<sitemapindex xmlns="%s"><sitemap><loc>http://s.example/maps/s1.xml.gz</loc>'
             '<lastmod>2004-10-01T18:23:17+00:00</lastmod></sitemap>'
             '<sitemap><loc>https://s.example/s2.xml</loc></sitemap>'
             '<sitemap><loc>http://other.example/s3.xml</loc></sitemap></sitemapindex>' % SM_NS,
    "text": "http://s.example/maps/1\r\nhttp://s.example/maps/2\n\nnot a url\nhttps://s.example/x\n",
    "latin1": b'<?xml version="1.0" encoding="ISO-8859-1"?><urlset><url><loc>http://s.example/maps/caf\xe9'
              b'</loc></url></urlset>',
    "utf16": "\ufeff<urlset/>".encode("utf-16-le"),
    "entities": '<!DOCTYPE urlset [<!ENTITY e "x">]><urlset><url><loc>http://s.example/maps/&e;'
                '</loc></url><url><loc>http://s.example/maps/&#x41;&amp;b=2&c</loc></url></urlset>',
    "malformed": '<urlset><url><loc>http://s.example/maps/1</loc></url><url><loc>http://s.example/2</lock>',
    "deep": "<urlset>" + "<a>" * 150 + "</a>" * 150 + "</urlset>",
}
FEEDS = {
    "rss2": '<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/">'
            '<channel><link>http://s.example/</link><item><link>http://s.example/maps/p1</link>'
            '<pubDate>Tue, 10 Jun 2003 04:00:00 GMT</pubDate></item><item><guid>http://s.example/maps/p2'
            '</guid><dc:date>2005-01-01T00:00:00Z</dc:date></item></channel></rss>',
    "rss1": '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"'
            ' xmlns:dc="http://purl.org/dc/elements/1.1/"><channel rdf:about="http://s.example/"/>'
            '<item rdf:about="http://s.example/maps/r1"><link>http://s.example/maps/r1</link>'
            '<dc:date>2005-01-01</dc:date></item></rdf:RDF>',
    "atom": '<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://s.example/maps/">'
            '<entry xml:base="2005/"><link rel="self" href="self"/><link href="post"/>'
            '<updated>2005-01-01T00:00:00Z</updated><content type="xhtml"><div xmlns='
            '"http://www.w3.org/1999/xhtml"><a href="no">x</a></div></content></entry></feed>',
}


def sitemap_feed():
    for name, body in list(SITEMAPS.items()) + list(FEEDS.items()):
        if isinstance(body, str):
            body = body.encode()
        put("sitemap_feed", name, b"\x00" + body)
        put("sitemap_feed", name + "-gz", b"\x01" + body)
    put("sitemap_feed", "index-robots-deep", b"\x06" + SITEMAPS["index"].encode())
    put("sitemap_feed", "urlset-robots", b"\x02" + SITEMAPS["urlset"].encode())
    two_members = gz(SITEMAPS["urlset"].encode()[:200]) + gz(SITEMAPS["urlset"].encode()[200:])
    put("sitemap_feed", "two-gzip-members", b"\x00" + two_members)
    put("sitemap_feed", "bad-gzip", b"\x00\x1f\x8b\x08\x00" + b"\xff" * 40)


# ---------------------------------------------------------------- visible_text
VISIBLE = {
    "page": '<!DOCTYPE html><html><head><title>Tides &amp; Moon</title><style>p{}</style>'
            '<script>var a = "<a href=/no>";</script></head><body><h1>Ocean tides</h1>'
            '<p>The <a href="/moon">Moon&#39;s pull</a> and <A HREF=\'/sun\'>the sun</a>.</p>'
            '<!-- <a href=/hidden> --><noscript>js</noscript><textarea>typed</textarea>'
            '<a href=" /e?a=1&amp;b=2 ">e</a>&nbsp;end</body></html>',
    "broken": '<a href="/x>unclosed <a href=/y>y<p class=\'z',
    "entities": 'caf&eacute; &#233;&#x41; &#0; &#x110000; &amp &lt;tag&gt; 1 < 2',
}


def visible_text():
    for name, html in VISIBLE.items():
        put("visible_text", name, html)


# ---------------------------------------------------------------- main_text
# Layout: one byte picking the limit (byte x 64 bytes, 255 for none), then the page.
ARTICLE = (b"<!DOCTYPE html><html><head><title>Bridge | Gazette</title><script>var a='<p>x</p>';"
           b"</script><style>p{color:red}</style></head><body><nav><ul><li><a href=/>Home</a></li>"
           b"<li><a href=/news>News</a></li></ul></nav><article><h1>Bridge work to resume</h1>"
           b"<p class=byline><a href=/a>By A. Writer</a></p><p>The river council met on Tuesday "
           b"to discuss the new bridge, which has been delayed for three years by disputes over "
           b"its cost.</p><div class=ad><a href=https://ads.example/c>Fresh coffee every week, "
           b"first box free</a></div><p>Engineers told the meeting that the foundations were "
           b"sound &amp; that work could resume in the spring&nbsp;if the budget is approved."
           b"</p><!-- <p>hidden</p> --></article><footer><p>&copy; 2024 Gazette</p></footer>"
           b"</body></html>")
CARDS = b"".join(b"<div class=card><h4><a href=/c/%d>Storm closes the coast road</a></h4><p>The "
                 b"coast road was closed for a day after the storm brought down trees near the "
                 b"harbour.</p></div>" % i for i in range(6))


def main_text():
    put("main_text", "article.html", b"\xff" + ARTICLE)
    put("main_text", "article-cut.html", b"\x06" + ARTICLE)
    put("main_text", "cards-no-article.html",
        b"\xff" + ARTICLE.replace(b"article>", b"div>") + CARDS)
    put("main_text", "hostile.html", b"\xff<p title='a > b'>one < two<a><a><a>x</a><y</p>"
        b"&#x110000;&#0;&#65&bogus;<script>never closed <p>hidden")


# ---------------------------------------------------------------- proxy_reply
def proxy_reply():
    # [flags, chunk, reply...]: flags 0 SOCKS5, 1 SOCKS5 with credentials, 2 to an address,
    # 3 HTTP CONNECT.
    put("proxy_reply", "socks-ok", b"\x00\x07" + b"\x05\x00" + b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x50")
    put("proxy_reply", "socks-auth-ok", b"\x01\x00" + b"\x05\x02" + b"\x01\x00"
        + b"\x05\x00\x00\x03\x04abcd\x01\xbb")
    put("proxy_reply", "socks-auth-refused", b"\x01\x03" + b"\x05\x02\x01\x01")
    put("proxy_reply", "socks-no-method", b"\x00\x01\x05\xff")
    put("proxy_reply", "socks-refused", b"\x02\x01\x05\x00\x05\x05\x00\x01\x00\x00\x00\x00\x00\x00")
    put("proxy_reply", "socks-v6", b"\x02\x20\x05\x00\x05\x00\x00\x04" + b"\x00" * 18)
    put("proxy_reply", "connect-ok", b"\x03\x10HTTP/1.1 200 Connection established\r\n\r\n")
    put("proxy_reply", "connect-407", b"\x03\x40HTTP/1.0 407 Proxy Authentication Required\r\n"
        b"Proxy-Authenticate: Basic realm=\"p\"\r\nContent-Length: 0\r\n\r\n")
    put("proxy_reply", "connect-403", b"\x03\x00HTTP/1.1 403 Forbidden\r\n\r\n")


if __name__ == "__main__":
    shutil.rmtree(CORPUS, ignore_errors=True)
    links(); http(); dns(); dns_tcp(); robots(); urlnorm(); warc(); url_seen(); cookies(); auth_challenges()
    sitemap_feed(); visible_text()
    main_text(); proxy_reply()

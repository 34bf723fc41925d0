/*
 * config.c - unit tests of lib/config.c, the operator config (hakopod.toml),
 * and of lib/app.c, the application config (hk.toml(5)).
 *
 * Table-driven: each rule has a small TOML text and the exact diagnostic it
 * must give.  Application texts go to app_parse() under the name
 * "app.toml"; operator texts are written to a temporary file, whose path
 * prefixes the expected message.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "config.h"
#include "spec.h"
#include "tap.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* Operator configs the application cases are checked against. */
enum srv_kind {
	SRV_SL,		/* serverless_address set */
	SRV_NOSL,	/* serverless_address unset */
	SRV_MAX2,	/* max_serverless_services = 2 */
	SRV_LONGDOM,	/* a 251-byte base_domain */
	SRV_ROOT,	/* allow_root_services = true */
	SRV_NODES,	/* SRV_SL and [nodes.worker-eu-1] (no engine), [nodes.
			   tcp-1] (tcp:// without TLS), [nodes.unix-1]
			   (container_network = "host") */
	SRV_NOENGINE,	/* SRV_SL, container_engine = "" */
	SRV_TCP,	/* SRV_SL, container_engine tcp:// without TLS */
	SRV_S6,		/* SRV_NODES and s6_scandir */
	SRV_VOLDIRS,	/* SRV_NODES, volume_dirs /srv/hk and /var/lib/d */
};

struct app_case {
	const char	*name;
	enum srv_kind	 srv;
	const char	*toml;
	const char	*want;		/* first diagnostic; NULL: valid */
	size_t		 ndiag;		/* 0 means 1 when want is set */
};

/* Lines 1-2. */
#define HEAD	"schema_version = 1\nname = \"fn\"\n"
/* Lines 3-4. */
#define SVC	HEAD "[services.api]\ncommand = [\"x\"]\n"
/* Lines 3-4, with an image instead. */
#define SVCI	HEAD "[services.api]\nimage = \"x\"\n"
/* public line 5, x line 6 then [serverless]; SLS: its first key line 7. */
#define SLX(x)	SVC "public = true\n" x "[services.api.serverless]\n"
#define SLS	SLX("")
/* x at line 5 of a serverless service (hosts are for those alone). */
#define SVH(x)	SVC x "public = true\n[services.api.serverless]\n"
#define NAMEMSG	"must be 1 to 63 of a-z, 0-9 and '-', " \
		"starting and ending with a letter or digit"
#define NOTSL	"not allowed with [serverless]"
#define NOTYET	"not supported yet: "
#define SL3								\
	HEAD "[services.a]\ncommand = [\"x\"]\npublic = true\n"		\
	"[services.a.serverless]\n"					\
	"[services.b]\ncommand = [\"x\"]\npublic = true\n"			\
	"[services.b.serverless]\n"					\
	"[services.c]\ncommand = [\"x\"]\npublic = true\n"			\
	"[services.c.serverless]\n"

static const struct app_case app_cases[] = {
	/* syntax errors come from lib/toml.c, prefixed "file:line: syntax:" */
	{ "syntax error", SRV_SL, "name = \n",
	    "app.toml:1: syntax: missing value", 0 },
	{ "truncated file", SRV_SL, HEAD "[services.api\n",
	    "app.toml:3: syntax: unexpected newline in table header, "
	    "expected ']'", 0 },
	{ "truncated string", SRV_SL, "schema_version = 1\nname = \"fn",
	    "app.toml:2: syntax: unterminated string", 0 },
	{ "invalid UTF-8", SRV_SL, HEAD "# caf\xe9\n",
	    "app.toml:3: syntax: invalid UTF-8", 0 },
	{ "key repeated", SRV_SL, HEAD "name = \"again\"\n",
	    "app.toml:3: syntax: duplicate key \"name\"", 0 },
	{ "table redefined", SRV_SL, SVC "[services.api]\nport = 1\n",
	    "app.toml:5: syntax: table [services.api] defined twice", 0 },

	/* the root */
	{ "schema_version missing", SRV_SL,
	    "name = \"fn\"\n[services.api]\ncommand = [\"x\"]\n",
	    "app.toml:1: schema_version: missing", 0 },
	{ "schema_version 2", SRV_SL, "schema_version = 2\nname = \"fn\"\n",
	    "app.toml:1: schema_version: must be 1", 0 },
	{ "schema_version string", SRV_SL,
	    "schema_version = \"1\"\nname = \"fn\"\n",
	    "app.toml:1: schema_version: must be an integer", 0 },
	{ "name missing", SRV_SL, "schema_version = 1\n",
	    "app.toml:1: name: missing", 0 },
	{ "name upper case", SRV_SL, "schema_version = 1\nname = \"Fn\"\n",
	    "app.toml:2: name: " NAMEMSG, 0 },
	{ "name underscore", SRV_SL, "schema_version = 1\nname = \"f_n\"\n",
	    "app.toml:2: name: " NAMEMSG, 0 },
	{ "name leading dash", SRV_SL, "schema_version = 1\nname = \"-fn\"\n",
	    "app.toml:2: name: " NAMEMSG, 0 },
	{ "name trailing dash", SRV_SL, "schema_version = 1\nname = \"fn-\"\n",
	    "app.toml:2: name: " NAMEMSG, 0 },
	{ "name empty", SRV_SL, "schema_version = 1\nname = \"\"\n",
	    "app.toml:2: name: " NAMEMSG, 0 },
	{ "name 64 bytes", SRV_SL, "schema_version = 1\nname = \""
	    "a123456789012345678901234567890123456789012345678901234567890123"
	    "\"\n", "app.toml:2: name: " NAMEMSG, 0 },
	{ "name integer", SRV_SL, "schema_version = 1\nname = 1\n",
	    "app.toml:2: name: must be a string", 0 },
	{ "unknown root key", SRV_SL, HEAD "version = 3\n",
	    "app.toml:3: version: unknown key", 0 },
	{ "unknown root table", SRV_SL, HEAD "[server]\nstate = \"x\"\n",
	    "app.toml:3: server: unknown table", 0 },
	{ "services not a table", SRV_SL, HEAD "services = 1\n",
	    "app.toml:3: services: must be a table", 0 },
	{ "array of tables", SRV_SL, HEAD "[[services]]\ncommand = [\"x\"]\n",
	    "app.toml:3: services: must be a table", 0 },

	/* a service */
	{ "service not a table", SRV_SL, HEAD "[services]\napi = 1\n",
	    "app.toml:4: services.api: must be a table", 0 },
	{ "service name upper case", SRV_SL,
	    HEAD "[services.Api]\ncommand = [\"x\"]\n",
	    "app.toml:3: services.Api: " NAMEMSG, 0 },
	{ "service name with a dot", SRV_SL,
	    HEAD "[services.\"a.b\"]\ncommand = [\"x\"]\n",
	    "app.toml:3: services.\"a.b\": " NAMEMSG, 0 },
	{ "unknown service key", SRV_SL, SVC "restart = \"always\"\n",
	    "app.toml:5: services.api.restart: unknown key", 0 },
	{ "unknown key with NUL", SRV_SL, SVC "\"image\\u0000\" = \"y\"\n",
	    "app.toml:5: services.api.\"image\\u0000\": unknown key", 0 },
	{ "unknown key with a tab", SRV_SL, SVC "\"a\\tb\" = 1\n",
	    "app.toml:5: services.api.\"a\\u0009b\": unknown key", 0 },
	{ "unknown service table", SRV_SL, SVC "[services.api.health]\n",
	    "app.toml:5: services.api.health: unknown table", 0 },
	{ "neither image nor command", SRV_SL,
	    HEAD "[services.api]\nport = 1\n",
	    "app.toml:3: services.api: requires image or command", 0 },
	{ "image with a space", SRV_SL,
	    HEAD "[services.api]\nimage = \"my image\"\n",
	    "app.toml:4: services.api.image: not an image reference (letters, "
	    "digits and _.-:/@, starting with a letter or digit)", 0 },
	{ "image starting with '/'", SRV_SL,
	    HEAD "[services.api]\nimage = \"/x\"\n",
	    "app.toml:4: services.api.image: not an image reference (letters, "
	    "digits and _.-:/@, starting with a letter or digit)", 0 },
	{ "image too long", SRV_SL, HEAD "[services.api]\nimage = \"x"
	    "123456789012345678901234567890123456789012345678901234567890123"
	    "123456789012345678901234567890123456789012345678901234567890123"
	    "123456789012345678901234567890123456789012345678901234567890123"
	    "123456789012345678901234567890123456789012345678901234567890123"
	    "123"
	    "\"\n",
	    "app.toml:4: services.api.image: too long (at most 255 bytes)", 0 },
	{ "image with registry, port and digest", SRV_SL,
	    HEAD "[services.api]\nimage = \"registry.local:5000/team/fn@"
	    "sha256:0123456789abcdef\"\n", NULL, 0 },
	{ "image empty", SRV_SL, HEAD "[services.api]\nimage = \"\"\n",
	    "app.toml:4: services.api.image: must not be empty", 0 },
	{ "image integer", SRV_SL, HEAD "[services.api]\nimage = 1\n",
	    "app.toml:4: services.api.image: must be a string", 0 },
	{ "image with NUL", SRV_SL,
	    HEAD "[services.api]\nimage = \"a\\u0000\"\n",
	    "app.toml:4: services.api.image: must not contain NUL", 0 },
	{ "command string", SRV_SL, HEAD "[services.api]\ncommand = \"x\"\n",
	    "app.toml:4: services.api.command: must be an array of strings",
	    0 },
	{ "command empty", SRV_SL, HEAD "[services.api]\ncommand = []\n",
	    "app.toml:4: services.api.command: must not be empty", 0 },
	{ "command element integer", SRV_SL,
	    HEAD "[services.api]\ncommand = [\n\"a\",\n1]\n",
	    "app.toml:6: services.api.command: must be an array of strings",
	    0 },
	{ "command program empty", SRV_SL,
	    HEAD "[services.api]\ncommand = [\"\", \"x\"]\n",
	    "app.toml:4: services.api.command: program name must not be empty",
	    0 },
	{ "command with NUL", SRV_SL,
	    HEAD "[services.api]\ncommand = [\"a\\u0000b\"]\n",
	    "app.toml:4: services.api.command: must not contain NUL", 0 },
	{ "directory integer", SRV_SL, SVC "directory = 1\n",
	    "app.toml:5: services.api.directory: must be a string", 0 },
	{ "directory empty", SRV_SL, SVC "directory = \"\"\n",
	    "app.toml:5: services.api.directory: must not be empty", 0 },
	{ "environment not a table", SRV_SL, SVC "environment = \"A=1\"\n",
	    "app.toml:5: services.api.environment: must be a table", 0 },
	{ "environment value integer", SRV_SL,
	    SVC "[services.api.environment]\nDEBUG = 1\n",
	    "app.toml:6: services.api.environment.DEBUG: must be a string", 0 },
	{ "environment value with NUL", SRV_SL,
	    SVC "[services.api.environment]\nA = \"\\u0000\"\n",
	    "app.toml:6: services.api.environment.A: must not contain NUL", 0 },
	{ "environment bad name", SRV_SL,
	    SVC "[services.api.environment]\n1X = \"a\"\n",
	    "app.toml:6: services.api.environment.1X: invalid variable name",
	    0 },
	{ "environment name with '='", SRV_SL,
	    SVC "[services.api.environment]\n\"A=B\" = \"a\"\n",
	    "app.toml:6: services.api.environment.\"A=B\": "
	    "invalid variable name", 0 },
	{ "environment PORT", SRV_SL,
	    SVC "[services.api.environment]\nPORT = \"80\"\n",
	    "app.toml:6: services.api.environment.PORT: reserved (set by hk)",
	    0 },
	{ "environment HOST, exec", SRV_SL,
	    SVC "[services.api.environment]\nHOST = \"0.0.0.0\"\n",
	    "app.toml:6: services.api.environment.HOST: reserved with backend "
	    "\"exec\" (set by hk: 127.0.0.1)", 0 },
	{ "environment HOST, container", SRV_SL,
	    SVCI "[services.api.environment]\nHOST = \"0.0.0.0\"\n", NULL, 0 },
	{ "environment LISTEN_FDS", SRV_SL,
	    SVC "environment = { LISTEN_FDS = \"1\" }\n",
	    "app.toml:5: services.api.environment.LISTEN_FDS: "
	    "reserved (set by hk)", 0 },
	{ "port too large", SRV_SL, SVC "port = 65536\n",
	    "app.toml:5: services.api.port: must be between 0 and 65535", 0 },
	{ "port negative", SRV_SL, SVC "port = -1\n",
	    "app.toml:5: services.api.port: must be between 0 and 65535", 0 },
	{ "port string", SRV_SL, SVC "port = \"80\"\n",
	    "app.toml:5: services.api.port: must be an integer", 0 },
	{ "port float", SRV_SL, SVC "port = 80.0\n",
	    "app.toml:5: services.api.port: must be an integer", 0 },
	{ "public string", SRV_SL, SVC "public = \"yes\"\n",
	    "app.toml:5: services.api.public: must be a boolean", 0 },
	{ "size unknown", SRV_SL, SVC "size = \"huge\"\n",
	    "app.toml:5: services.api.size: must be small, medium or large",
	    0 },
	{ "user nobody", SRV_SL, SVC "user = \"nobody\"\n", NULL, 0 },
	{ "user with a group", SRV_SL, SVC "user = \"nobody:nogroup\"\n",
	    NULL, 0 },
	{ "user unknown", SRV_SL, SVC "user = \"hk-no-such-user\"\n",
	    "app.toml:5: services.api.user: "
	    "no such user \"hk-no-such-user\"", 0 },
	{ "user's group unknown", SRV_SL,
	    SVC "user = \"nobody:hk-no-such-group\"\n",
	    "app.toml:5: services.api.user: "
	    "no such group \"hk-no-such-group\"", 0 },
	{ "user root", SRV_SL, SVC "user = \"root\"\n",
	    "app.toml:5: services.api.user: \"root\" is uid 0: allowed only "
	    "with server.allow_root_services = true", 0 },
	{ "user root with its group", SRV_SL, SVC "user = \"root:nogroup\"\n",
	    "app.toml:5: services.api.user: \"root:nogroup\" is uid 0: "
	    "allowed only with server.allow_root_services = true", 0 },
	{ "user root, allowed", SRV_ROOT, SVC "user = \"root\"\n", NULL, 0 },
	{ "user two colons", SRV_SL, SVC "user = \"a:b:c\"\n",
	    "app.toml:5: services.api.user: must be USER or USER:GROUP", 0 },
	{ "user empty group", SRV_SL, SVC "user = \"nobody:\"\n",
	    "app.toml:5: services.api.user: must be USER or USER:GROUP", 0 },
	{ "user with a space", SRV_SL, SVC "user = \"no body\"\n",
	    "app.toml:5: services.api.user: must be USER or USER:GROUP", 0 },
	{ "user empty", SRV_SL, SVC "user = \"\"\n",
	    "app.toml:5: services.api.user: must not be empty", 0 },
	{ "user integer", SRV_SL, SVC "user = 0\n",
	    "app.toml:5: services.api.user: must be a string", 0 },
	{ "size integer", SRV_SL, SVC "size = 1\n",
	    "app.toml:5: services.api.size: must be a string", 0 },
	{ "replicas 0", SRV_SL, SVC "replicas = 0\n",
	    "app.toml:5: services.api.replicas: must be between 1 and 64", 0 },
	{ "replicas 65", SRV_SL, SVC "replicas = 65\n",
	    "app.toml:5: services.api.replicas: must be between 1 and 64", 0 },
	{ "replicas string", SRV_SL, SVC "replicas = \"1\"\n",
	    "app.toml:5: services.api.replicas: must be an integer", 0 },
	{ "ordinary startup_timeout_seconds 3600", SRV_SL,
	    SVC "startup_timeout_seconds = 3600\n", NULL, 0 },
	{ "ordinary startup_timeout_seconds 4", SRV_SL,
	    SVC "startup_timeout_seconds = 4\n",
	    "app.toml:5: services.api.startup_timeout_seconds: must be "
	    "between 5 and 3600", 0 },
	{ "ordinary startup_timeout_seconds 3601", SRV_SL,
	    SVC "startup_timeout_seconds = 3601\n",
	    "app.toml:5: services.api.startup_timeout_seconds: must be "
	    "between 5 and 3600", 0 },
	{ "ordinary startup_timeout_seconds string", SRV_SL,
	    SVC "startup_timeout_seconds = \"60\"\n",
	    "app.toml:5: services.api.startup_timeout_seconds: must be an "
	    "integer", 0 },
	{ "serverless with a service's startup_timeout_seconds", SRV_SL,
	    SLX("startup_timeout_seconds = 30\n"),
	    "app.toml:6: services.api.startup_timeout_seconds: " NOTSL
	    " (it has its own, in [serverless])", 0 },
	{ "hosts string", SRV_SL, SVH("hosts = \"a.example\"\n"),
	    "app.toml:5: services.api.hosts: must be an array of strings", 0 },
	{ "hosts empty", SRV_SL, SVH("hosts = []\n"),
	    "app.toml:5: services.api.hosts: must not be empty", 0 },
	{ "hosts integer", SRV_SL, SVH("hosts = [1]\n"),
	    "app.toml:5: services.api.hosts: must be an array of strings", 0 },
	{ "host with a space", SRV_SL, SVH("hosts = [\"a b.example\"]\n"),
	    "app.toml:5: services.api.hosts: invalid host \"a b.example\"", 0 },
	{ "host leading dash", SRV_SL, SVH("hosts = [\"-a.example\"]\n"),
	    "app.toml:5: services.api.hosts: invalid host \"-a.example\"", 0 },
	{ "host empty label", SRV_SL, SVH("hosts = [\"a..example\"]\n"),
	    "app.toml:5: services.api.hosts: invalid host \"a..example\"", 0 },
	{ "host with a port", SRV_SL, SVH("hosts = [\"a.example:80\"]\n"),
	    "app.toml:5: services.api.hosts: invalid host \"a.example:80\"",
	    0 },
	{ "host IPv4 literal", SRV_SL, SVH("hosts = [\"10.0.0.7\"]\n"),
	    NULL, 0 },
	{ "host the gateway's own address", SRV_SL,
	    SVH("hosts = [\"127.0.0.1\"]\n"), "app.toml:5: services.api.hosts: "
	    "127.0.0.1: the gateway's own address (serverless_address): it "
	    "routes by /fn/ path only, for runs and for clients alike", 0 },
	{ "host IPv4 out of range", SRV_SL, SVH("hosts = [\"10.0.0.256\"]\n"),
	    "app.toml:5: services.api.hosts: invalid host \"10.0.0.256\"", 0 },
	{ "host label 64", SRV_SL, SVH("hosts = [\"a"
	    "123456789012345678901234567890123456789012345678901234567890123"
	    ".example\"]\n"), "app.toml:5: services.api.hosts: invalid host "
	    "\"a123456789012345678901234567890123456789012345678901234567890123"
	    "...\"", 0 },
	{ "host element line", SRV_SL,
	    SVH("hosts = [\n\"a.example\",\n\"b_.example\",\n]\n"),
	    "app.toml:7: services.api.hosts: invalid host \"b_.example\"", 0 },
	{ "duplicate host in a service", SRV_SL,
	    SVH("hosts = [\"a.example\", \"A.example\"]\n"),
	    "app.toml:5: services.api.hosts: duplicate host \"a.example\" "
	    "(also services.api)", 0 },
	{ "duplicate host across services", SRV_SL,
	    HEAD "[services.a]\ncommand = [\"x\"]\nhosts = [\"h.example\"]\n"
	    "public = true\n[services.a.serverless]\n"
	    "[services.b]\ncommand = [\"x\"]\nhosts = [\"H.EXAMPLE\"]\n"
	    "public = true\n[services.b.serverless]\n",
	    "app.toml:10: services.b.hosts: duplicate host \"h.example\" "
	    "(also services.a)", 0 },
	{ "host is another service's default", SRV_SL,
	    HEAD "[services.a]\ncommand = [\"x\"]\n"
	    "[services.b]\ncommand = [\"x\"]\nhosts = [\"a.fn.localhost\"]\n"
	    "public = true\n[services.b.serverless]\n",
	    "app.toml:7: services.b.hosts: duplicate host \"a.fn.localhost\" "
	    "(also services.a)", 0 },
	{ "default host too long", SRV_LONGDOM, SVC,
	    "app.toml:3: services.api.hosts: default host is longer than "
	    "253 bytes: set hosts", 0 },
	{ "readiness http without path", SRV_SL, SVC "readiness = \"http\"\n",
	    "app.toml:5: services.api.readiness: "
	    "must be tcp, http:/PATH, notify, socket or healthcheck", 0 },
	{ "readiness http relative", SRV_SL,
	    SVC "readiness = \"http:healthz\"\n",
	    "app.toml:5: services.api.readiness: "
	    "must be tcp, http:/PATH, notify, socket or healthcheck", 0 },
	{ "readiness path with space", SRV_SL,
	    SVC "readiness = \"http:/a b\"\n",
	    "app.toml:5: services.api.readiness: "
	    "must be tcp, http:/PATH, notify, socket or healthcheck", 0 },
	{ "readiness unknown", SRV_SL, SVC "readiness = \"exec\"\n",
	    "app.toml:5: services.api.readiness: "
	    "must be tcp, http:/PATH, notify, socket or healthcheck", 0 },
	{ "node_name invalid", SRV_SL, SVC "node_name = \"Node_1\"\n",
	    "app.toml:5: services.api.node_name: invalid node name", 0 },
	{ "node_name integer", SRV_SL, SVC "node_name = 1\n",
	    "app.toml:5: services.api.node_name: must be a string", 0 },
	{ "node_name without nodes", SRV_SL,
	    SVC "node_name = \"worker-eu-1\"\n",
	    "app.toml:5: services.api.node_name: no node \"worker-eu-1\" in "
	    "the operator configuration", 0 },
	{ "node_name not a node", SRV_NODES,
	    SVC "node_name = \"worker-eu-2\"\n",
	    "app.toml:5: services.api.node_name: no node \"worker-eu-2\" in "
	    "the operator configuration", 0 },
	{ "node_name with exec", SRV_NODES,
	    SVC "node_name = \"worker-eu-1\"\n",
	    "app.toml:5: services.api.node_name: backend \"exec\" runs its "
	    "command on this host, not on node \"worker-eu-1\"", 0 },
	{ "node_name with backend = exec", SRV_NODES,
	    SVC "backend = \"exec\"\nnode_name = \"worker-eu-1\"\n",
	    "app.toml:6: services.api.node_name: backend \"exec\" runs its "
	    "command on this host, not on node \"worker-eu-1\"", 0 },
	{ "node_name with an image, a node without an engine", SRV_NODES,
	    SVCI "node_name = \"worker-eu-1\"\n",
	    "app.toml:5: services.api.node_name: node \"worker-eu-1\" has no "
	    "container_engine", 0 },
	{ "node_name with an image, a tcp:// engine without TLS", SRV_NODES,
	    SVCI "node_name = \"tcp-1\"\n",
	    "app.toml:5: services.api.node_name: node \"tcp-1\": "
	    "container_engine tcp://10.0.0.3:2375 has no TLS files "
	    "(container_tls_ca, container_tls_cert, container_tls_key)", 0 },
	{ "node_name with an image, a node with an engine", SRV_NODES,
	    SVCI "node_name = \"unix-1\"\n", NULL, 0 },
	{ "container without server.container_engine", SRV_NOENGINE, SVCI,
	    "app.toml:4: services.api.image: backend \"container\" needs "
	    "server.container_engine (unset)", 0 },
	{ "backend container without server.container_engine", SRV_NOENGINE,
	    SVCI "backend = \"container\"\n",
	    "app.toml:5: services.api.backend: backend \"container\" needs "
	    "server.container_engine (unset)", 0 },
	{ "container on a tcp:// engine without TLS", SRV_TCP, SVCI,
	    "app.toml:4: services.api.image: server: container_engine "
	    "tcp://10.0.0.9:2376 has no TLS files (container_tls_ca, "
	    "container_tls_cert, container_tls_key)", 0 },
	{ "container readiness notify", SRV_SL,
	    SVCI "readiness = \"notify\"\n",
	    "app.toml:5: services.api.readiness: notify is not available with "
	    "backend \"container\" (tcp, http:/PATH or healthcheck)", 0 },
	{ "container readiness socket", SRV_SL,
	    SVCI "readiness = \"socket\"\n",
	    "app.toml:5: services.api.readiness: socket is not available with "
	    "backend \"container\" (tcp, http:/PATH or healthcheck)", 0 },
	{ "container readiness healthcheck", SRV_SL,
	    SVCI "readiness = \"healthcheck\"\n", NULL, 0 },
	{ "container readiness http", SRV_SL,
	    SVCI "readiness = \"http:/health\"\n", NULL, 0 },
	{ "exec readiness healthcheck", SRV_SL,
	    SVC "readiness = \"healthcheck\"\n",
	    "app.toml:5: services.api.readiness: healthcheck (the image's "
	    "HEALTHCHECK) requires backend \"container\"", 0 },
	{ "backend_http2 string", SRV_SL, SVC "backend_http2 = \"yes\"\n",
	    "app.toml:5: services.api.backend_http2: must be a boolean", 0 },
	{ "ordinary key nested too deeply", SRV_SL, SVC "ports = "
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	    "[[[[[[1]]]]]]"
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
	    "]]]]\n",
	    "app.toml:5: services.api.ports: " NOTYET "hk gives a service one "
	    "port, port", 2 },

	/* volumes: a container's; bind mounts under volume_dirs alone */
	{ "volumes, named", SRV_SL, SVCI "volumes = [\"pgdata:/var/lib/pg\", "
	    "\"cache.1:/c/:ro\", \"x_y:/e:rw\"]\n", NULL, 0 },
	{ "volumes, exec", SRV_SL, SVC "volumes = [\"pgdata:/var/lib/pg\"]\n",
	    "app.toml:5: services.api.volumes: not with backend \"exec\", "
	    "which runs command on this host: volumes are a container's (use "
	    "backend = \"container\", or the directories themselves)", 0 },
	{ "volumes, s6", SRV_S6,
	    SVC "backend = \"s6\"\nvolumes = [\"d:/d\"]\n",
	    "app.toml:6: services.api.volumes: not with backend \"s6\", "
	    "which runs command on this host: volumes are a container's (use "
	    "backend = \"container\", or the directories themselves)", 0 },
	{ "volumes, not an array", SRV_SL, SVCI "volumes = \"d:/d\"\n",
	    "app.toml:5: services.api.volumes: must be an array of strings",
	    0 },
	{ "volumes, no path", SRV_SL, SVCI "volumes = [\"data\"]\n",
	    "app.toml:5: services.api.volumes: \"data\": not NAME:/PATH or "
	    "/HOST:/PATH (a ':' between them)", 0 },
	{ "volumes, relative path", SRV_SL, SVCI "volumes = [\"d:var\"]\n",
	    "app.toml:5: services.api.volumes: \"var\": not an absolute "
	    "path", 0 },
	{ "volumes, bad option", SRV_SL, SVCI "volumes = [\"d:/d:rx\"]\n",
	    "app.toml:5: services.api.volumes: \"d:/d:rx\": the options after "
	    "the path are ro or rw", 0 },
	{ "volumes, bad name", SRV_SL, SVCI "volumes = [\"-d:/d\"]\n",
	    "app.toml:5: services.api.volumes: \"-d\": not a volume name "
	    "(letters, digits and _.-, a letter or digit first, at most 63 "
	    "bytes) nor an absolute path", 0 },
	{ "volumes, the root", SRV_SL, SVCI "volumes = [\"d:/\"]\n",
	    "app.toml:5: services.api.volumes: \"d:/\": the container's / "
	    "cannot be a volume", 0 },
	{ "volumes, a path named twice", SRV_SL,
	    SVCI "volumes = [\"a:/d\", \"b:/d/\"]\n",
	    "app.toml:5: services.api.volumes: /d: a container path named "
	    "twice", 0 },
	{ "volumes, ..", SRV_VOLDIRS,
	    SVCI "volumes = [\"/srv/hk/../etc:/d\"]\n",
	    "app.toml:5: services.api.volumes: \"/srv/hk/../etc\": \"..\" is "
	    "not allowed", 0 },
	{ "volumes, bind without volume_dirs", SRV_SL,
	    SVCI "volumes = [\"/srv/hk/db:/d\"]\n",
	    "app.toml:5: services.api.volumes: /srv/hk/db: not under "
	    "server.volume_dirs (none: bind mounts are refused)", 0 },
	{ "volumes, bind outside volume_dirs", SRV_VOLDIRS,
	    SVCI "volumes = [\"/srv/hkx:/d\", \"/etc:/e\"]\n",
	    "app.toml:5: services.api.volumes: /srv/hkx: not under "
	    "server.volume_dirs (/srv/hk,/var/lib/d)", 2 },
	{ "volumes, bind under volume_dirs", SRV_VOLDIRS,
	    SVCI "volumes = [\"/srv/hk:/a\", \"/var/lib/d/x/./y:/b:ro\"]\n",
	    NULL, 0 },
	{ "volumes, over the source", SRV_VOLDIRS,
	    SVCI "volumes = [\"a:/app/data\"]\nsource = \"/nonexistent-hk\"\n",
	    "app.toml:5: services.api.volumes: /app/data: hk mounts the source "
	    "at /app", 2 },
	{ "volumes, over the secrets", SRV_VOLDIRS,
	    SVCI "secrets = [\"K\"]\nvolumes = [\"a:/run/secrets\"]\n",
	    "app.toml:6: services.api.volumes: /run/secrets: hk mounts the "
	    "secrets at /run/secrets", 0 },
	{ "volumes, /app without a source", SRV_VOLDIRS,
	    SVCI "volumes = [\"a:/app\", \"b:/run/secrets/x\"]\n", NULL, 0 },
	{ "volumes, bind on another node", SRV_VOLDIRS,
	    SVCI "node_name = \"unix-1\"\nvolumes = [\"/srv/hk/a:/a\", "
	    "\"n:/n\"]\n",
	    "app.toml:6: services.api.volumes: /srv/hk/a: a bind mount is not "
	    "allowed with node_name \"unix-1\" (volume_dirs are this host's; "
	    "use a named volume)", 0 },

	/* keys hk cannot yet honour: refused, not ignored */
	{ "ports", SRV_SL, SVC "ports = [5433]\n",
	    "app.toml:5: services.api.ports: " NOTYET "hk gives a service one "
	    "port, port", 0 },
	{ "tcp_ports", SRV_SL, SVC "tcp_ports = [5432]\n",
	    "app.toml:5: services.api.tcp_ports: " NOTYET "the gateway routes "
	    "HTTP by host and publishes no TCP port", 0 },
	{ "backend_certificate", SRV_SL,
	    SVC "backend_certificate = { path = \"/c.pem\" }\n",
	    "app.toml:5: services.api.backend_certificate: " NOTYET "hk mounts "
	    "no certificate into a service", 0 },
	{ "gpu", SRV_SL, SVCI "gpu = 1\n",
	    "app.toml:5: services.api.gpu: " NOTYET "hk gives an instance no "
	    "GPU", 0 },
	{ "autoscale", SRV_SL, SVC "autoscale = { min = 1, max = 4 }\n",
	    "app.toml:5: services.api.autoscale: " NOTYET "hk runs one "
	    "instance of an ordinary service and scales none", 0 },
	{ "service-level jobs", SRV_SL,
	    SVC "jobs = [{ command = [\"migrate\"] }]\n",
	    "app.toml:5: services.api.jobs: " NOTYET "hk runs no deployment "
	    "jobs (runs are the file's [jobs.NAME] tables)", 0 },
	{ "backend_http2 = true", SRV_SL, SVC "backend_http2 = true\n",
	    "app.toml:5: services.api.backend_http2: " NOTYET "the gateway "
	    "speaks HTTP/1.1 to every backend", 0 },
	{ "backend_http2 = false", SRV_SL, SVC "backend_http2 = false\n",
	    NULL, 0 },
	{ "replicas 3, exec, a port each", SRV_SL, SVC "replicas = 3\n",
	    NULL, 0 },
	{ "replicas 64, exec", SRV_SL, SVC "replicas = 64\n", NULL, 0 },
	{ "replicas 3, exec, port, readiness socket", SRV_SL,
	    SVC "port = 8080\nreadiness = \"socket\"\nreplicas = 3\n",
	    NULL, 0 },
	{ "replicas 3, exec, port, readiness notify", SRV_SL,
	    SVC "port = 8080\nreadiness = \"notify\"\nreplicas = 3\n",
	    NULL, 0 },
	{ "replicas 2, exec, port, readiness tcp", SRV_SL,
	    SVC "port = 8080\nreplicas = 2\n",
	    "app.toml:6: services.api.replicas: 2 with port 8080: the "
	    "replicas share one listening socket, handed to each as fd 3 "
	    "(LISTEN_FDS), and a probe of that port cannot tell one from "
	    "another: set readiness = \"socket\" or \"notify\", or port = 0 "
	    "(a port each)", 0 },
	{ "replicas 2, exec, port, readiness http", SRV_SL,
	    SVC "port = 8080\nreadiness = \"http:/\"\nreplicas = 2\n",
	    "app.toml:7: services.api.replicas: 2 with port 8080: the "
	    "replicas share one listening socket, handed to each as fd 3 "
	    "(LISTEN_FDS), and a probe of that port cannot tell one from "
	    "another: set readiness = \"socket\" or \"notify\", or port = 0 "
	    "(a port each)", 0 },
	{ "replicas 64, container", SRV_SL, SVCI "replicas = 64\n", NULL, 0 },
	{ "replicas 3, container, port, bridge", SRV_SL,
	    SVCI "port = 8080\nreplicas = 3\n", NULL, 0 },
	{ "replicas 3, container, port 0, host network", SRV_NODES,
	    SVCI "node_name = \"unix-1\"\nreplicas = 3\n", NULL, 0 },
	{ "replicas 3, container, port, host network", SRV_NODES,
	    SVCI "node_name = \"unix-1\"\nport = 8080\nreplicas = 3\n",
	    "app.toml:7: services.api.replicas: 3 with port 8080: the "
	    "containers share the node's network (container_network = "
	    "\"host\"), where each would bind the port: set port = 0 (a port "
	    "each)", 0 },
	{ "replicas 2, s6, a port each", SRV_S6,
	    SVC "backend = \"s6\"\nreplicas = 2\n", NULL, 0 },
	{ "replicas 2, s6, port, readiness notify", SRV_S6,
	    SVC "backend = \"s6\"\nport = 8080\nreadiness = "
	    "\"notify\"\nreplicas = 2\n", NULL, 0 },
	{ "replicas 2, s6, port, readiness tcp", SRV_S6,
	    SVC "backend = \"s6\"\nport = 8080\nreplicas = 2\n",
	    "app.toml:7: services.api.replicas: 2 with port 8080: the "
	    "replicas share one listening socket, handed to each as fd 3 "
	    "(LISTEN_FDS), and a probe of that port cannot tell one from "
	    "another: set readiness = \"notify\", or port = 0 (a port "
	    "each)", 0 },
	{ "replicas 2, systemd, a port each", SRV_SL,
	    SVC "backend = \"systemd\"\nreplicas = 2\n", NULL, 0 },
	{ "replicas 2, systemd, port, readiness notify", SRV_SL,
	    SVC "backend = \"systemd\"\nport = 8080\nreadiness = "
	    "\"notify\"\nreplicas = 2\n", NULL, 0 },
	{ "replicas 3, systemd, port, readiness socket", SRV_SL,
	    SVC "backend = \"systemd\"\nport = 8080\nreadiness = "
	    "\"socket\"\nreplicas = 3\n", NULL, 0 },
	{ "replicas 2, systemd, port, readiness tcp", SRV_SL,
	    SVC "backend = \"systemd\"\nport = 8080\nreplicas = 2\n",
	    "app.toml:7: services.api.replicas: 2 with port 8080: the "
	    "replicas share one listening socket, handed to each as fd 3 "
	    "(LISTEN_FDS), and a probe of that port cannot tell one from "
	    "another: set readiness = \"socket\" or \"notify\", or port = 0 "
	    "(a port each)", 0 },
	{ "replicas 1, container, port", SRV_SL,
	    SVCI "port = 8080\nreplicas = 1\n", NULL, 0 },
	{ "replicas 1", SRV_SL, SVC "replicas = 1\n", NULL, 0 },
	{ "size medium, exec", SRV_SL, SVC "size = \"medium\"\n",
	    "app.toml:5: services.api.size: \"medium\" is not applied by "
	    "backend \"exec\", which sets no memory or CPU limit: use "
	    "container or systemd, or leave size unset", 0 },
	{ "size large, s6", SRV_S6,
	    SVC "backend = \"s6\"\nsize = \"large\"\n",
	    "app.toml:6: services.api.size: \"large\" is not applied by "
	    "backend \"s6\", which sets no memory or CPU limit: use "
	    "container or systemd, or leave size unset", 0 },
	{ "size large, serverless exec", SRV_SL,
	    SLX("size = \"large\"\n"),
	    "app.toml:6: services.api.size: \"large\" is not applied by "
	    "backend \"exec\", which sets no memory or CPU limit: use "
	    "container or systemd, or leave size unset", 0 },
	{ "size small, exec", SRV_SL, SVC "size = \"small\"\n", NULL, 0 },
	{ "size large, systemd", SRV_SL,
	    SVC "backend = \"systemd\"\nsize = \"large\"\n", NULL, 0 },
	{ "size large, container", SRV_SL, SVCI "size = \"large\"\n",
	    NULL, 0 },
	{ "directory, container", SRV_SL, SVCI "directory = \"/srv\"\n",
	    "app.toml:5: services.api.directory: not applied by backend "
	    "\"container\": a container works in its image's directory (or "
	    "in source)", 0 },
	{ "directory, exec", SRV_SL,
	    SVC "backend = \"exec\"\ndirectory = \"/srv\"\n", NULL, 0 },
	{ "every ordinary key on an ordinary service: all refused", SRV_NOSL,
	    SVC "volumes = [\"data:/d\"]\nports = [9000]\ntcp_ports = [5432]\n"
	    "backend_certificate = { path = \"/c.pem\" }\ngpu = 1\n"
	    "autoscale = { min = 1, max = 4, cpu = 0.8 }\n"
	    "jobs = [{ command = [\"migrate\"] }]\nbackend_http2 = true\n"
	    "replicas = 3\n",
	    "app.toml:5: services.api.volumes: not with backend \"exec\", "
	    "which runs command on this host: volumes are a container's (use "
	    "backend = \"container\", or the directories themselves)", 8 },
	{ "the operator's database (issue 34)", SRV_SL,
	    HEAD "[services.db]\nimage = \"docker.io/library/postgres:16\"\n"
	    "replicas = 3\nvolumes = [\"pgdata:/var/lib/postgresql/data\"]\n"
	    "gpu = 1\nports = [5433]\n",
	    "app.toml:7: services.db.gpu: " NOTYET "hk gives an instance no "
	    "GPU", 2 },

	/* [serverless] */
	{ "serverless not a table", SRV_SL, SVC "serverless = true\n",
	    "app.toml:5: services.api.serverless: must be a table", 0 },
	{ "serverless unknown key", SRV_SL, SLS "min_instances = 0\n",
	    "app.toml:7: services.api.serverless.min_instances: unknown key",
	    0 },
	{ "min_replicas 2", SRV_SL, SLS "min_replicas = 2\n",
	    "app.toml:7: services.api.serverless.min_replicas: "
	    "must be between 0 and 1", 0 },
	{ "min_replicas -1", SRV_SL, SLS "min_replicas = -1\n",
	    "app.toml:7: services.api.serverless.min_replicas: "
	    "must be between 0 and 1", 0 },
	{ "idle_seconds 29", SRV_SL, SLS "idle_seconds = 29\n",
	    "app.toml:7: services.api.serverless.idle_seconds: "
	    "must be between 30 and 86400", 0 },
	{ "idle_seconds 86401", SRV_SL, SLS "idle_seconds = 86401\n",
	    "app.toml:7: services.api.serverless.idle_seconds: "
	    "must be between 30 and 86400", 0 },
	{ "idle_seconds string", SRV_SL, SLS "idle_seconds = \"300\"\n",
	    "app.toml:7: services.api.serverless.idle_seconds: "
	    "must be an integer", 0 },
	{ "startup_timeout_seconds 4", SRV_SL,
	    SLS "startup_timeout_seconds = 4\n",
	    "app.toml:7: services.api.serverless.startup_timeout_seconds: "
	    "must be between 5 and 300", 0 },
	{ "startup_timeout_seconds 301", SRV_SL,
	    SLS "startup_timeout_seconds = 301\n",
	    "app.toml:7: services.api.serverless.startup_timeout_seconds: "
	    "must be between 5 and 300", 0 },
	{ "request_timeout_seconds 0", SRV_SL,
	    SLS "request_timeout_seconds = 0\n",
	    "app.toml:7: services.api.serverless.request_timeout_seconds: "
	    "must be between 1 and 300", 0 },
	{ "request_timeout_seconds 301", SRV_SL,
	    SLS "request_timeout_seconds = 301\n",
	    "app.toml:7: services.api.serverless.request_timeout_seconds: "
	    "must be between 1 and 300", 0 },
	{ "max_concurrency 0", SRV_SL, SLS "max_concurrency = 0\n",
	    "app.toml:7: services.api.serverless.max_concurrency: "
	    "must be between 1 and 64", 0 },
	{ "max_concurrency 65", SRV_SL, SLS "max_concurrency = 65\n",
	    "app.toml:7: services.api.serverless.max_concurrency: "
	    "must be between 1 and 64", 0 },
	{ "request_buffering 1", SRV_SL, SLS "request_buffering = 1\n",
	    "app.toml:7: services.api.serverless.request_buffering: "
	    "must be a boolean", 0 },
	{ "waiting_page_after_ms -1", SRV_SL,
	    SLS "waiting_page_after_ms = -1\n",
	    "app.toml:7: services.api.serverless.waiting_page_after_ms: "
	    "must be between 0 and 300000", 0 },
	{ "waiting_page_after_ms 300001", SRV_SL,
	    SLS "waiting_page_after_ms = 300001\n",
	    "app.toml:7: services.api.serverless.waiting_page_after_ms: "
	    "must be between 0 and 300000", 0 },
	{ "idle_action pause", SRV_SL, SLS "idle_action = \"pause\"\n",
	    "app.toml:7: services.api.serverless.idle_action: \"pause\": "
	    "must be \"stop\" or \"suspend\"", 0 },
	{ "suspend_max_seconds with stop", SRV_SL,
	    SLS "suspend_max_seconds = 60\n",
	    "app.toml:7: services.api.serverless.suspend_max_seconds: "
	    "only with idle_action = \"suspend\"", 0 },
	{ "idle_check tcp", SRV_SL, SLS "idle_check = \"tcp\"\n",
	    "app.toml:7: services.api.serverless.idle_check: \"tcp\": must "
	    "be http:/PATH (a GET whose 2xx answer says the service is idle)",
	    0 },
	{ "idle_check with a control character", SRV_SL,
	    SLS "idle_check = \"http:/a\\tb\"\n",
	    "app.toml:7: services.api.serverless.idle_check: \"http:/a\tb\": "
	    "must be http:/PATH (a GET whose 2xx answer says the service is "
	    "idle)", 0 },
	{ "idle_check an integer", SRV_SL, SLS "idle_check = 1\n",
	    "app.toml:7: services.api.serverless.idle_check: must be a string",
	    0 },
	{ "idle_check with min_replicas = 1", SRV_SL,
	    SLS "idle_check = \"http:/busy\"\nmin_replicas = 1\n",
	    "app.toml:7: services.api.serverless.idle_check: not allowed with "
	    "min_replicas = 1 (the service never sleeps)", 0 },
	{ "idle_check_max_seconds alone", SRV_SL,
	    SLS "idle_check_max_seconds = 60\n",
	    "app.toml:7: services.api.serverless.idle_check_max_seconds: "
	    "only with idle_check", 0 },
	{ "idle_check_max_seconds 86401", SRV_SL,
	    SLS "idle_check = \"http:/\"\nidle_check_max_seconds = 86401\n",
	    "app.toml:8: services.api.serverless.idle_check_max_seconds: "
	    "must be between 10 and 86400", 0 },
	{ "idle_check on an ordinary service", SRV_SL,
	    SVC "idle_check = \"http:/busy\"\n",
	    "app.toml:5: services.api.idle_check: unknown key (a key of "
	    "[serverless]: only a serverless service sleeps)", 0 },
	{ "idle_check", SRV_SL, SLS "idle_check = \"http:/busy?x=1\"\n"
	    "idle_check_max_seconds = 10\n", NULL, 0 },
	{ "waiting_page_after_ms true", SRV_SL,
	    SLS "waiting_page_after_ms = true\n",
	    "app.toml:7: services.api.serverless.waiting_page_after_ms: "
	    "must be an integer", 0 },
	{ "serverless replicas 2", SRV_SL, SLX("replicas = 2\n"),
	    "app.toml:6: services.api.replicas: must be 1 with [serverless]",
	    0 },
	{ "serverless replicas 0", SRV_SL, SLX("replicas = 0\n"),
	    "app.toml:6: services.api.replicas: must be 1 with [serverless]",
	    0 },
	{ "serverless without public", SRV_SL,
	    SVC "[services.api.serverless]\n",
	    "app.toml:5: services.api.public: "
	    "serverless requires public = true", 0 },
	{ "serverless public = false", SRV_SL,
	    SVC "public = false\n[services.api.serverless]\n",
	    "app.toml:5: services.api.public: "
	    "serverless requires public = true", 0 },
	{ "serverless with volumes", SRV_SL,
	    SLX("volumes = [\"data:/var/lib/data\"]\n"),
	    "app.toml:6: services.api.volumes: " NOTSL, 0 },
	{ "serverless with ports", SRV_SL, SLX("ports = [9000]\n"),
	    "app.toml:6: services.api.ports: " NOTSL, 0 },
	{ "serverless with tcp_ports", SRV_SL, SLX("tcp_ports = [5432]\n"),
	    "app.toml:6: services.api.tcp_ports: " NOTSL, 0 },
	{ "serverless with backend_certificate", SRV_SL,
	    SLX("backend_certificate = \"/etc/ssl/b.pem\"\n"),
	    "app.toml:6: services.api.backend_certificate: " NOTSL, 0 },
	{ "serverless with gpu", SRV_SL, SLX("gpu = 1\n"),
	    "app.toml:6: services.api.gpu: " NOTSL, 0 },
	{ "serverless with autoscale", SRV_SL,
	    SLX("autoscale = { min = 1, max = 4 }\n"),
	    "app.toml:6: services.api.autoscale: " NOTSL, 0 },
	{ "serverless with jobs", SRV_SL,
	    SLX("jobs = [{ command = [\"migrate\"] }]\n"),
	    "app.toml:6: services.api.jobs: " NOTSL, 0 },
	{ "serverless with backend_http2", SRV_SL,
	    SLX("backend_http2 = true\n"),
	    "app.toml:6: services.api.backend_http2: " NOTSL
	    " (the gateway speaks HTTP/1.1)", 0 },
	{ "serverless without serverless_address", SRV_NOSL, SLS,
	    "app.toml:6: services.api.serverless: "
	    "requires server.serverless_address (unset)", 0 },
	{ "more than max_serverless_services", SRV_MAX2, SL3,
	    "app.toml:14: services.c.serverless: "
	    "exceeds server.max_serverless_services (2)", 0 },

	/* backend */
	{ "backend unknown", SRV_SL, SVC "backend = \"docker\"\n",
	    "app.toml:5: services.api.backend: "
	    "must be exec, container, s6, systemd or kubernetes", 0 },
	{ "backend integer", SRV_SL, SVC "backend = 1\n",
	    "app.toml:5: services.api.backend: must be a string", 0 },
	{ "backend empty", SRV_SL, SVC "backend = \"\"\n",
	    "app.toml:5: services.api.backend: must not be empty", 0 },
	{ "backend exec without command", SRV_SL,
	    SVCI "backend = \"exec\"\n",
	    "app.toml:5: services.api.backend: exec requires command", 0 },
	{ "backend container without image", SRV_SL,
	    SVC "backend = \"container\"\n",
	    "app.toml:5: services.api.backend: container requires image", 0 },
	{ "backend container", SRV_SL, SVCI "backend = \"container\"\n",
	    NULL, 0 },
	{ "backend s6 without s6_scandir", SRV_SL, SVC "backend = \"s6\"\n",
	    "app.toml:5: services.api.backend: "
	    "s6 requires server.s6_scandir (unset)", 0 },
	{ "backend s6 without command", SRV_S6, SVCI "backend = \"s6\"\n",
	    "app.toml:5: services.api.backend: s6 requires command", 0 },
	{ "backend s6 with readiness socket", SRV_S6,
	    SVC "backend = \"s6\"\nreadiness = \"socket\"\n",
	    "app.toml:6: services.api.readiness: \"socket\" needs backend "
	    "\"exec\" or \"systemd\", which hand their command a listener: "
	    "use tcp, http:/PATH or notify with \"s6\"", 0 },
	{ "backend s6 with a node", SRV_S6,
	    SVC "backend = \"s6\"\nnode_name = \"worker-eu-1\"\n",
	    "app.toml:6: services.api.node_name: backend \"s6\" runs its "
	    "command on this host, not on node \"worker-eu-1\"", 0 },
	{ "backend s6", SRV_S6,
	    SVC "backend = \"s6\"\nreadiness = \"notify\"\n", NULL, 0 },
	{ "backend s6 beside an image", SRV_S6,
	    SVC "image = \"x\"\nbackend = \"s6\"\n",
	    "app.toml:5: services.api.image: not used by backend \"s6\", "
	    "which runs command on this host: use backend = \"container\", "
	    "or remove it", 0 },
	{ "backend systemd", SRV_SL, SVC "backend = \"systemd\"\n",
	    NULL, 0 },
	{ "backend systemd without command", SRV_SL,
	    SVCI "backend = \"systemd\"\n",
	    "app.toml:5: services.api.backend: systemd requires command", 0 },
	{ "backend systemd, image and command", SRV_SL,
	    SVC "image = \"x\"\nbackend = \"systemd\"\n",
	    "app.toml:5: services.api.image: not used by backend \"systemd\", "
	    "which runs command on this host: use backend = \"container\", "
	    "or remove it", 0 },
	{ "backend systemd, readiness notify", SRV_SL,
	    SVC "backend = \"systemd\"\nreadiness = \"notify\"\n", NULL, 0 },
	{ "backend systemd, readiness socket", SRV_SL,
	    SVC "backend = \"systemd\"\nreadiness = \"socket\"\n", NULL, 0 },
	{ "node_name with backend = systemd", SRV_NODES,
	    SVC "backend = \"systemd\"\nnode_name = \"worker-eu-1\"\n",
	    "app.toml:6: services.api.node_name: backend \"systemd\" runs its "
	    "command on this host, not on node \"worker-eu-1\"", 0 },
	{ "image alone (seed 000's example)", SRV_SL,
	    HEAD "[services.api]\nimage = "
	    "\"ghcr.io/example/http-function:latest\"\nport = 8080\n"
	    "public = true\nsize = \"small\"\nreplicas = 1\n"
	    "[services.api.serverless]\nmin_replicas = 0\n"
	    "idle_seconds = 300\nstartup_timeout_seconds = 60\n"
	    "request_timeout_seconds = 60\nmax_concurrency = 16\n", NULL, 0 },
	{ "image and command", SRV_SL, SVC "image = \"x\"\n", NULL, 0 },
	{ "image and a bad command", SRV_SL,
	    SVCI "command = \"x\"\n",
	    "app.toml:5: services.api.command: must be an array of strings",
	    0 },
	{ "bad backend beside an image", SRV_SL,
	    SVCI "backend = \"docker\"\n",
	    "app.toml:5: services.api.backend: "
	    "must be exec, container, s6, systemd or kubernetes", 0 },
	{ "image and command, backend exec", SRV_SL,
	    SVC "image = \"x\"\nbackend = \"exec\"\n",
	    "app.toml:5: services.api.image: not used by backend \"exec\", "
	    "which runs command on this host: use backend = \"container\", "
	    "or remove it", 0 },
	{ "command, backend exec", SRV_SL, SVC "backend = \"exec\"\n",
	    NULL, 0 },
	{ "image, backend kubernetes", SRV_SL,
	    SVCI "backend = \"kubernetes\"\n", NULL, 0 },
	{ "command, backend kubernetes", SRV_SL,
	    SVCI "backend = \"kubernetes\"\ncommand = [\"x\"]\n",
	    "app.toml:6: services.api.command: not with backend "
	    "\"kubernetes\": the Deployment runs the image's own entrypoint",
	    0 },
	{ "readiness http, backend kubernetes", SRV_SL,
	    SVCI "backend = \"kubernetes\"\nreadiness = \"http:/up\"\n",
	    NULL, 0 },
	{ "readiness notify, backend kubernetes", SRV_SL,
	    SVCI "backend = \"kubernetes\"\nreadiness = \"notify\"\n",
	    "app.toml:6: services.api.readiness: only \"tcp\" or "
	    "\"http:/PATH\" with backend \"kubernetes\": the pod is ready "
	    "once its EndpointSlice says so and its port accepts a "
	    "connection (or answers PATH)", 0 },
	{ "kubernetes_deployment, no image", SRV_SL,
	    HEAD "[services.api]\nbackend = \"kubernetes\"\n"
	    "kubernetes_deployment = \"web\"\n", NULL, 0 },
	{ "kubernetes_deployment and image", SRV_SL,
	    SVCI "backend = \"kubernetes\"\nkubernetes_deployment = \"web\"\n",
	    "app.toml:4: services.api.image: not with kubernetes_deployment: "
	    "the operator's Deployment names its image", 0 },
	{ "no image, backend kubernetes", SRV_SL,
	    SVC "backend = \"kubernetes\"\n",
	    "app.toml:5: services.api.backend: kubernetes requires image", 0 },

	/* several diagnostics come in line order */
	{ "three in line order", SRV_SL,
	    HEAD "[services.api]\nfoo = 1\nport = -1\nsize = \"xl\"\n",
	    "app.toml:3: services.api: requires image or command", 4 },

	/* valid */
	{ "ordinary service", SRV_SL, SVC, NULL, 0 },
	{ "serverless service", SRV_SL, SLS, NULL, 0 },
	{ "secrets", SRV_SL, SVC "secrets = [\"B\", \"A_1\"]\n"
	    "secrets_env = true\n", NULL, 0 },
	{ "secrets: not an array", SRV_SL, SVC "secrets = \"A\"\n",
	    "app.toml:5: services.api.secrets: must be an array of names", 0 },
	{ "secrets: a bad name", SRV_SL, SVC "secrets = [\"A-B\"]\n",
	    "app.toml:5: services.api.secrets: not a secret name (letters, "
	    "digits and _, not starting with a digit, at most 63 bytes)", 0 },
	{ "secrets: a name twice", SRV_SL, SVC "secrets = [\"A\", \"A\"]\n",
	    "app.toml:5: services.api.secrets: \"A\" named twice", 0 },
	{ "secrets_env without secrets", SRV_SL, SVC "secrets_env = true\n",
	    "app.toml:5: services.api.secrets_env: requires secrets", 0 },
	{ "secrets_env: a variable of environment", SRV_SL,
	    SVC "secrets = [\"A\"]\nsecrets_env = true\n"
	    "[services.api.environment]\nA = \"x\"\n",
	    "app.toml:5: services.api.secrets: \"A\" is also in environment "
	    "(secrets_env)", 0 },
	{ "secrets_env: a name hk sets", SRV_SL,
	    SVC "secrets = [\"PORT\"]\nsecrets_env = true\n",
	    "app.toml:5: services.api.secrets: \"PORT\" is reserved (set by "
	    "hk; secrets_env)", 0 },
	{ "secrets with systemd", SRV_SL,
	    SVC "backend = \"systemd\"\nsecrets = [\"A\"]\n", NULL, 0 },
	{ "secrets_env: not with systemd", SRV_SL,
	    SVC "backend = \"systemd\"\nsecrets = [\"A\"]\n"
	    "secrets_env = true\n",
	    "app.toml:7: services.api.secrets_env: not with backend "
	    "\"systemd\" (systemd keeps a unit's environment, shown by "
	    "systemctl show): read the files of $CREDENTIALS_DIRECTORY", 0 },
	{ "secrets in a container", SRV_SL, SVCI "secrets = [\"A\"]\n",
	    NULL, 0 },
	{ "secrets in a container of another node", SRV_NODES,
	    SVCI "node_name = \"unix-1\"\nsecrets = [\"A\"]\n", NULL, 0 },
	{ "secrets_env: not in a container", SRV_SL,
	    SVCI "secrets = [\"A\"]\nsecrets_env = true\n",
	    "app.toml:6: services.api.secrets_env: not with backend "
	    "\"container\" (the engine keeps a container's environment, "
	    "shown by podman inspect): read the files of "
	    "$CREDENTIALS_DIRECTORY", 0 },
	{ "environment: CREDENTIALS_DIRECTORY is hk's", SRV_SL,
	    SVC "[services.api.environment]\nCREDENTIALS_DIRECTORY = \"/x\"\n",
	    "app.toml:6: services.api.environment.CREDENTIALS_DIRECTORY: "
	    "reserved (set by hk)", 0 },
	{ "serverless backend_http2 = false", SRV_SL,
	    SLX("backend_http2 = false\n"), NULL, 0 },
	{ "serverless replicas = 1", SRV_SL, SLX("replicas = 1\n"), NULL, 0 },
	{ "two serverless of max 2", SRV_MAX2,
	    HEAD "[services.a]\ncommand = [\"x\"]\npublic = true\n"
	    "[services.a.serverless]\n"
	    "[services.b]\ncommand = [\"x\"]\npublic = true\n"
	    "[services.b.serverless]\n", NULL, 0 },
	{ "command only", SRV_SL,
	    HEAD "[services.api]\ncommand = [\"python3\", \"h.py\"]\n", NULL,
	    0 },
	{ "no services", SRV_SL, HEAD, NULL, 0 },
	{ "policy at its bounds", SRV_SL, SLS "min_replicas = 1\n"
	    "idle_seconds = 86400\nstartup_timeout_seconds = 5\n"
	    "request_timeout_seconds = 300\nmax_concurrency = 64\n", NULL, 0 },
};

/* The first diagnostic and the count; all of them for "three in order". */
static const char *const three[] = {
	"app.toml:3: services.api: requires image or command",
	"app.toml:4: services.api.foo: unknown key",
	"app.toml:5: services.api.port: must be between 0 and 65535",
	"app.toml:6: services.api.size: must be small, medium or large",
};

struct srv_case {
	const char	*name;
	const char	*toml;	/* "~" stands for a run of 1100 'x' */
	const char	*want;	/* after "<path>:"; NULL: valid */
};

static const struct srv_case srv_cases[] = {
	{ "syntax error", "[server\n",
	    "1: syntax: unexpected newline in table header, "
	    "expected ']'" },
	{ "invalid UTF-8", "[server]\nbase_domain = \"\xc3\"\n",
	    "2: syntax: invalid UTF-8" },
	{ "key repeated", "[server]\nstate = \"sqlite://a\"\n"
	    "state = \"sqlite://b\"\n", "3: syntax: duplicate key \"state\"" },
	{ "table redefined", "[server]\n[server]\n",
	    "2: syntax: table [server] defined twice" },
	{ "unknown key", "[server]\nlisten = \"127.0.0.1:80\"\n",
	    "2: server.listen: unknown key" },
	{ "unknown table", "[telemetry]\nport = 1\n",
	    "1: telemetry: unknown table" },
	{ "metrics unknown key", "[metrics]\nport = 1\n",
	    "2: metrics.port: unknown key" },
	{ "metrics unknown table", "[metrics.activate]\n",
	    "1: metrics.activate: must be a string" },
	{ "metrics not a table", "metrics = 1\n",
	    "1: metrics: must be a table" },
	{ "metrics address without a port",
	    "[metrics]\nscale = \"127.0.0.1\"\n",
	    "2: metrics.scale: must be host:port" },
	{ "metrics address port 0", "[metrics]\nidle = \"127.0.0.1:0\"\n",
	    "2: metrics.idle: port must be between 1 and 65535" },
	{ "metrics address an integer", "[metrics]\nevents = 9100\n",
	    "2: metrics.events: must be a string" },
	{ "metrics on the public listener", "[server]\n"
	    "serverless_address = \"127.0.0.1:8082\"\n[metrics]\n"
	    "activate = \"127.0.0.1:8082\"\n",
	    "4: metrics.activate: must not be the gateway's public listener "
	    "(server.serverless_address = \"127.0.0.1:8082\"): use a private "
	    "address" },
	{ "metrics on a wildcard public listener", "[server]\n"
	    "serverless_address = \"gw.example:8082\"\n"
	    "serverless_listen = \"0.0.0.0:8082\"\n[metrics]\n"
	    "activate = \"127.0.0.1:8082\"\n",
	    "5: metrics.activate: must not be the gateway's public listener "
	    "(server.serverless_listen = \"0.0.0.0:8082\"): use a private "
	    "address" },
	{ "unknown root key", "state = \"sqlite://a\"\n",
	    "1: state: unknown key" },
	{ "unknown sub-table", "[server.tls]\n",
	    "1: server.tls: unknown table" },
	{ "server not a table", "server = 1\n",
	    "1: server: must be a table" },
	{ "string key given an integer", "[server]\nstate = 1\n",
	    "2: server.state: must be a string" },
	{ "integer key given a string",
	    "[server]\nmax_concurrent_starts = \"2\"\n",
	    "2: server.max_concurrent_starts: must be an integer" },
	{ "boolean key given an integer", "[server]\nrequest_log = 0\n",
	    "2: server.request_log: must be true or false" },
	{ "boolean key given a string", "[server]\nrequest_log = \"no\"\n",
	    "2: server.request_log: must be true or false" },
	{ "service_log_size", "[server]\nservice_log_size = 4096\n"
	    "service_log_files = 2\n", NULL },
	{ "service_log_size small", "[server]\nservice_log_size = 4095\n",
	    "2: server.service_log_size: must be between 4096 and 1073741824" },
	{ "service_log_files 1", "[server]\nservice_log_files = 1\n",
	    "2: server.service_log_files: must be between 2 and 1000" },
	{ "service_user nobody", "[server]\nservice_user = \"nobody\"\n",
	    NULL },
	{ "service_user root", "[server]\nservice_user = \"root\"\n", NULL },
	{ "service_user unknown",
	    "[server]\nservice_user = \"hk-no-such-user\"\n",
	    "2: server.service_user: no such user \"hk-no-such-user\"" },
	{ "service_user unknown group",
	    "[server]\nservice_user = \"nobody:hk-no-such-group\"\n",
	    "2: server.service_user: no such group \"hk-no-such-group\"" },
	{ "service_user syntax", "[server]\nservice_user = \":nogroup\"\n",
	    "2: server.service_user: must be USER or USER:GROUP" },
	{ "allow_root_services true",
	    "[server]\nallow_root_services = true\n", NULL },
	{ "allow_root_services string",
	    "[server]\nallow_root_services = \"yes\"\n",
	    "2: server.allow_root_services: must be true or false" },
	{ "boolean key false", "[server]\nrequest_log = false\n", NULL },
	{ "string key given a boolean", "[server]\nstate = true\n",
	    "2: server.state: must be a string" },
	{ "string with NUL", "[server]\nbase_domain = \"a\\u0000b\"\n",
	    "2: server.base_domain: must not contain NUL" },
	{ "address without port",
	    "[server]\nserverless_address = \"127.0.0.1\"\n",
	    "2: server.serverless_address: must be host:port" },
	{ "address empty host", "[server]\nserverless_address = \":8082\"\n",
	    "2: server.serverless_address: must be host:port" },
	{ "address empty port",
	    "[server]\nserverless_listen = \"0.0.0.0:\"\n",
	    "2: server.serverless_listen: must be host:port" },
	{ "address port 0", "[server]\nserverless_address = \"127.0.0.1:0\"\n",
	    "2: server.serverless_address: port must be between 1 and 65535" },
	{ "address port 65536",
	    "[server]\nserverless_address = \"127.0.0.1:65536\"\n",
	    "2: server.serverless_address: port must be between 1 and 65535" },
	{ "address port name",
	    "[server]\nserverless_address = \"127.0.0.1:http\"\n",
	    "2: server.serverless_address: port must be between 1 and 65535" },
	{ "address IPv6 without brackets",
	    "[server]\nserverless_address = \"::1:8082\"\n",
	    "2: server.serverless_address: "
	    "invalid host (IPv4, [IPv6] or a name)" },
	{ "address IPv6 unclosed",
	    "[server]\nserverless_address = \"[::1:8082\"\n",
	    "2: server.serverless_address: must be host:port" },
	{ "address IPv6 invalid",
	    "[server]\nserverless_address = \"[::g]:8082\"\n",
	    "2: server.serverless_address: "
	    "invalid host (IPv4, [IPv6] or a name)" },
	{ "address bad name",
	    "[server]\nserverless_address = \"bad_host:8082\"\n",
	    "2: server.serverless_address: "
	    "invalid host (IPv4, [IPv6] or a name)" },
	{ "address bad IPv4",
	    "[server]\nserverless_address = \"10.0.0.256:8082\"\n",
	    "2: server.serverless_address: "
	    "invalid host (IPv4, [IPv6] or a name)" },
	{ "state mysql", "[server]\nstate = \"mysql://h/db\"\n",
	    "2: server.state: must be sqlite://PATH or postgres://..." },
	{ "state sqlite without path", "[server]\nstate = \"sqlite://\"\n",
	    "2: server.state: must be sqlite://PATH or postgres://..." },
	{ "state too long", "[server]\nstate = \"sqlite:///~\"\n",
	    "2: server.state: too long (at most 1023 bytes)" },
	{ "waiting_page relative", "[server]\nwaiting_page = \"w.html\"\n",
	    "2: server.waiting_page: must be an absolute path" },
	{ "s6_scandir relative", "[server]\ns6_scandir = \"service\"\n",
	    "2: server.s6_scandir: must be an absolute path" },
	{ "s6_scandir too long", "[server]\ns6_scandir = \"/"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxx\"\n",
	    "2: server.s6_scandir: too long (at most 80 bytes)" },
	{ "runtime_dir relative", "[server]\nruntime_dir = \"run/hk\"\n",
	    "2: server.runtime_dir: must be an absolute path" },
	{ "runtime_dir too long", "[server]\nruntime_dir = \"/"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxx\"\n",
	    "2: server.runtime_dir: too long (at most 80 bytes)" },
	{ "base_domain invalid", "[server]\nbase_domain = \"a b\"\n",
	    "2: server.base_domain: invalid domain name" },
	{ "base_domain empty", "[server]\nbase_domain = \"\"\n",
	    "2: server.base_domain: invalid domain name" },
	{ "max_concurrent_requests 0",
	    "[server]\nmax_concurrent_requests = 0\n",
	    "2: server.max_concurrent_requests: must be between 1 and 65536" },
	{ "max_concurrent_requests 65537",
	    "[server]\nmax_concurrent_requests = 65537\n",
	    "2: server.max_concurrent_requests: must be between 1 and 65536" },
	{ "max_concurrent_starts 0", "[server]\nmax_concurrent_starts = 0\n",
	    "2: server.max_concurrent_starts: must be between 1 and 64" },
	{ "max_concurrent_starts 65", "[server]\nmax_concurrent_starts = 65\n",
	    "2: server.max_concurrent_starts: must be between 1 and 64" },
	{ "max_body_bytes -1", "[server]\nmax_body_bytes = -1\n",
	    "2: server.max_body_bytes: must be between 0 and 1073741824" },
	{ "max_body_bytes 1 GiB + 1",
	    "[server]\nmax_body_bytes = 1073741825\n",
	    "2: server.max_body_bytes: must be between 0 and 1073741824" },
	{ "max_serverless_services 0",
	    "[server]\nmax_serverless_services = 0\n",
	    "2: server.max_serverless_services: must be between 1 and 65536" },
	{ "max_serverless_services 65537",
	    "[server]\nmax_serverless_services = 65537\n",
	    "2: server.max_serverless_services: must be between 1 and 65536" },
	{ "time_unit_ms 0", "[server]\ntime_unit_ms = 0\n",
	    "2: server.time_unit_ms: must be between 1 and 1000" },
	{ "time_unit_ms 1001", "[server]\ntime_unit_ms = 1001\n",
	    "2: server.time_unit_ms: must be between 1 and 1000" },
	{ "time_unit_ms a string", "[server]\ntime_unit_ms = \"10\"\n",
	    "2: server.time_unit_ms: must be an integer" },
	{ "volume_dirs a string", "[server]\nvolume_dirs = \"/srv\"\n",
	    "2: server.volume_dirs: must be an array of strings" },
	{ "volume_dirs relative", "[server]\nvolume_dirs = [\"srv\"]\n",
	    "2: server.volume_dirs: \"srv\": must be an absolute directory "
	    "other than /, without ':' or a final '/'" },
	{ "volume_dirs /", "[server]\nvolume_dirs = [\"/srv\", \"/\"]\n",
	    "2: server.volume_dirs: \"/\": must be an absolute directory "
	    "other than /, without ':' or a final '/'" },
	{ "volume_dirs ..", "[server]\nvolume_dirs = [\"/srv/../etc\"]\n",
	    "2: server.volume_dirs: \"/srv/../etc\": must be normalized (no "
	    "//, . or ..)" },
	{ "trusted_proxies a string",
	    "[server]\ntrusted_proxies = \"127.0.0.1\"\n",
	    "2: server.trusted_proxies: must be an array of strings" },
	{ "trusted_proxies a bad block",
	    "[server]\ntrusted_proxies = [\"10.0.0.0/33\"]\n",
	    "2: server.trusted_proxies: \"10.0.0.0/33\": not an address or "
	    "CIDR block" },
	{ "trusted_proxies a name",
	    "[server]\ntrusted_proxies = [\"::1\", \"haproxy\"]\n",
	    "2: server.trusted_proxies: \"haproxy\": not an address or "
	    "CIDR block" },
	{ "trusted_proxies a number", "[server]\ntrusted_proxies = [1]\n",
	    "2: server.trusted_proxies: item 1: must be an address or CIDR "
	    "block" },
	{ "trusted_proxies two in one item",
	    "[server]\ntrusted_proxies = [\"::1,10.0.0.1\"]\n",
	    "2: server.trusted_proxies: item 1: must be an address or CIDR "
	    "block" },

	{ "events_max_rows 0", "[server]\nevents_max_rows = 0\n",
	    "2: server.events_max_rows: must be between 1 and 1000000000" },
	{ "requests_max_rows 1e9 + 1",
	    "[server]\nrequests_max_rows = 1000000001\n",
	    "2: server.requests_max_rows: must be between 1 and 1000000000" },
	{ "events_max_age_days 0", "[server]\nevents_max_age_days = 0\n",
	    "2: server.events_max_age_days: must be between 1 and 36500" },
	{ "requests_max_age_days 36501",
	    "[server]\nrequests_max_age_days = 36501\n",
	    "2: server.requests_max_age_days: must be between 1 and 36500" },
	{ "requests_max_age_days a string",
	    "[server]\nrequests_max_age_days = \"7d\"\n",
	    "2: server.requests_max_age_days: must be an integer" },

	{ "container_engine http",
	    "[server]\ncontainer_engine = \"http://localhost:2375\"\n",
	    "2: server.container_engine: "
	    "must be unix:///PATH or tcp://HOST:PORT" },
	{ "container_engine a bare path",
	    "[server]\ncontainer_engine = \"/run/docker.sock\"\n",
	    "2: server.container_engine: "
	    "must be unix:///PATH or tcp://HOST:PORT" },
	{ "container_engine relative unix",
	    "[server]\ncontainer_engine = \"unix://docker.sock\"\n",
	    "2: server.container_engine: "
	    "must be unix:///PATH or tcp://HOST:PORT" },
	{ "container_engine socket path too long",
	    "[server]\ncontainer_engine = \"unix:///"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"\n",
	    "2: server.container_engine: "
	    "socket path too long (at most 107 bytes)" },
	{ "container_engine tcp without port",
	    "[server]\ncontainer_engine = \"tcp://10.0.0.2\"\n",
	    "2: server.container_engine: must be host:port" },
	{ "container_engine tcp port 0",
	    "[server]\ncontainer_engine = \"tcp://10.0.0.2:0\"\n",
	    "2: server.container_engine: port must be between 1 and 65535" },
	{ "container_engine integer", "[server]\ncontainer_engine = 1\n",
	    "2: server.container_engine: must be a string" },
	{ "container_network unknown",
	    "[server]\ncontainer_network = \"podman\"\n",
	    "2: server.container_network: "
	    "must be bridge, slirp4netns or host" },
	{ "freezer unknown", "[server]\nfreezer = \"cgroup3\"\n",
	    "2: server.freezer: must be auto, cgroup2, cgroup1 or signal" },
	{ "freezer integer", "[server]\nfreezer = 2\n",
	    "2: server.freezer: must be a string" },
	{ "kubernetes_namespace upper", "[server]\n"
	    "kubernetes_namespace = \"Prod\"\n",
	    "2: server.kubernetes_namespace: must be a DNS label: at most 63 "
	    "of a-z, 0-9 and '-', not at either end" },
	{ "kubernetes_namespace dash", "[server]\n"
	    "kubernetes_namespace = \"-x\"\n",
	    "2: server.kubernetes_namespace: must be a DNS label: at most 63 "
	    "of a-z, 0-9 and '-', not at either end" },
	{ "kubernetes_config relative", "[server]\n"
	    "kubernetes_config = \"kubeconfig\"\n",
	    "2: server.kubernetes_config: must be an absolute path" },
	{ "container_tls_ca relative",
	    "[server]\ncontainer_tls_ca = \"ca.pem\"\n",
	    "2: server.container_tls_ca: must be an absolute path" },
	{ "container TLS files, one relative: that one alone is said",
	    "[server]\ncontainer_engine = \"tcp://10.0.0.2:2376\"\n"
	    "container_tls_ca = \"ca.pem\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n",
	    "3: server.container_tls_ca: must be an absolute path" },
	{ "container_tls_key missing",
	    "[server]\ncontainer_tls_key = \"/nonexistent/hk/key.pem\"\n",
	    "2: server.container_tls_key: no such file" },
	{ "container TLS files without a tcp:// engine",
	    "[server]\ncontainer_tls_ca = \"/dev/null\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n",
	    "2: server: TLS files are for a tcp:// container_engine" },
	{ "container TLS files, one missing",
	    "[server]\ncontainer_engine = \"tcp://10.0.0.2:2376\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n",
	    "3: server: container_tls_ca, container_tls_cert and "
	    "container_tls_key go together" },
	{ "node network unknown",
	    "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "container_network = \"none\"\n",
	    "3: nodes.w1.container_network: "
	    "must be bridge, slirp4netns or host" },
	{ "node TLS files without a tcp:// engine",
	    "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "container_engine = \"unix:///run/w1.sock\"\n"
	    "container_tls_ca = \"/dev/null\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n",
	    "1: nodes.w1: TLS files are for a tcp:// container_engine" },
	{ "node TLS files, one only",
	    "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "container_engine = \"tcp://10.0.0.2:2376\"\n"
	    "container_tls_ca = \"/dev/null\"\n",
	    "1: nodes.w1: container_tls_ca, container_tls_cert and "
	    "container_tls_key go together" },
	{ "nodes not a table", "nodes = 1\n", "1: nodes: must be a table" },
	{ "node not a table", "[nodes]\nw1 = 1\n",
	    "2: nodes.w1: must be a table" },
	{ "node name upper case", "[nodes.W1]\naddress = \"10.0.0.2\"\n",
	    "1: nodes.W1: invalid node name" },
	{ "node name with '_'", "[nodes.w_1]\naddress = \"10.0.0.2\"\n",
	    "1: nodes.w_1: invalid node name" },
	{ "node without address", "[nodes.w1]\n",
	    "1: nodes.w1: requires address" },
	{ "node without address, with an engine",
	    "[nodes.w1]\ncontainer_engine = \"tcp://10.0.0.2:2375\"\n",
	    "1: nodes.w1: requires address" },
	{ "node address with a port",
	    "[nodes.w1]\naddress = \"10.0.0.2:80\"\n",
	    "2: nodes.w1.address: must be an IPv4 or IPv6 address" },
	{ "node address a name", "[nodes.w1]\naddress = \"w1.internal\"\n",
	    "2: nodes.w1.address: must be an IPv4 or IPv6 address" },
	{ "node address empty", "[nodes.w1]\naddress = \"\"\n",
	    "2: nodes.w1.address: must be an IPv4 or IPv6 address" },
	{ "node address integer", "[nodes.w1]\naddress = 1\n",
	    "2: nodes.w1.address: must be a string" },
	{ "node address in brackets", "[nodes.w1]\naddress = \"[::1]\"\n",
	    "2: nodes.w1.address: must be an IPv4 or IPv6 address" },
	{ "node engine http",
	    "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "container_engine = \"http://10.0.0.2:2375\"\n",
	    "3: nodes.w1.container_engine: "
	    "must be unix:///PATH or tcp://HOST:PORT" },
	{ "node unknown key",
	    "[nodes.w1]\naddress = \"10.0.0.2\"\nport = 2375\n",
	    "3: nodes.w1.port: unknown key" },
	{ "node unknown table", "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "[nodes.w1.tls]\n", "3: nodes.w1.tls: unknown table" },

	/* valid */
	{ "empty file", "", NULL },
	{ "nodes", "[nodes.w1]\naddress = \"10.0.0.2\"\n"
	    "[nodes.w2]\naddress = \"fd00::3\"\n"
	    "container_engine = \"tcp://[fd00::3]:2375\"\n"
	    "[nodes.w3]\naddress = \"127.0.0.3\"\n"
	    "container_engine = \"unix:///run/w3/podman.sock\"\n", NULL },
	{ "no nodes", "[nodes]\n", NULL },
	{ "metrics", "[server]\nserverless_address = \"127.0.0.1:8082\"\n"
	    "[metrics]\nactivate = \"127.0.0.1:9101\"\n"
	    "scale = \"[::1]:9102\"\nidle = \"localhost:9103\"\n"
	    "events = \"127.0.0.1:9104\"\njobs = \"127.0.0.1:9105\"\n",
	    NULL },
	{ "metrics: another daemon may share the gateway's port number",
	    "[server]\nserverless_address = \"127.0.0.1:8082\"\n"
	    "[metrics]\nscale = \"127.0.0.2:8082\"\n", NULL },
	{ "no metrics", "[metrics]\n", NULL },
	{ "no container engine", "[server]\ncontainer_engine = \"\"\n", NULL },
	{ "a tcp:// engine with TLS", "[server]\n"
	    "container_engine = \"tcp://10.0.0.2:2376\"\n"
	    "container_network = \"slirp4netns\"\n"
	    "container_tls_ca = \"/dev/null\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n", NULL },
	{ "IPv6 address", "[server]\nserverless_address = \"[::1]:8082\"\n",
	    NULL },
	{ "name address", "[server]\nserverless_address = \"gw.local:8082\"\n",
	    NULL },
	{ "unset address", "[server]\nserverless_address = \"\"\n", NULL },
	{ "postgresql URL", "[server]\nstate = \"postgresql://u@h/db\"\n",
	    NULL },
	{ "relative sqlite", "[server]\nstate = \"sqlite://state.db\"\n",
	    NULL },
	{ "bounds", "[server]\nmax_body_bytes = 0\nmax_concurrent_starts = 64\n"
	    "max_concurrent_requests = 65536\nmax_serverless_services = 1\n",
	    NULL },
	{ "time_unit_ms bounds", "[server]\ntime_unit_ms = 1\n", NULL },
	{ "freezer cgroup2", "[server]\nfreezer = \"cgroup2\"\n", NULL },
	{ "kubernetes keys", "[server]\nkubernetes_namespace = \"hk-prod\"\n"
	    "kubernetes_config = \"/etc/hakopod/kubeconfig\"\n", NULL },
	{ "freezer cgroup1", "[server]\nfreezer = \"cgroup1\"\n", NULL },
	{ "freezer signal", "[server]\nfreezer = \"signal\"\n", NULL },
	{ "trusted_proxies", "[server]\ntrusted_proxies = [\"127.0.0.1\", "
	    "\"10.0.0.0/8\", \"::1\", \"2001:db8::/32\"]\n", NULL },
	{ "trusted_proxies empty", "[server]\ntrusted_proxies = []\n", NULL },
	{ "retention bounds", "[server]\nevents_max_rows = 1\n"
	    "events_max_age_days = 36500\nrequests_max_rows = 1000000000\n"
	    "requests_max_age_days = 1\n", NULL },
};

static char tmpdir[200];

static void	 clear_env(void);
static void	 srv_make(struct server_config *, enum srv_kind);
static const char *write_file(const char *, const char *, size_t);
static void	 expand(char *, size_t, const char *);
static void	 run_app_cases(void);
static void	 run_srv_cases(void);
static size_t	 key_at(const char *);
static void	 test_defaults(void);
static void	 test_retention(void);
static void	 test_reload(void);
static void	 test_nodes(void);
static void	 test_missing(void);
static double	 now(void);
static void	 test_sizes(void);
static void	 test_precedence(void);
static void	 test_values(void);
static void	 test_defaults_app(void);
static void	 test_stability(void);
static void	 test_spec_decode(void);
static void	 test_spec_idle_check(void);
static void	 test_decode_backend(void);
static void	 test_decode_volumes(void);
static void	 test_image_pull(void);
static void	 test_ordinary_start(void);
static void	 test_many(void);
static void	 test_examples(void);
static void	 cleanup(void);

static const char *const hk_env[] = {
	"HAKOPOD_CONFIG", "HAKOPOD_SERVERLESS_ADDRESS",
	"HAKOPOD_SERVERLESS_LISTEN", "HAKOPOD_STATE", "HAKOPOD_RUNTIME_DIR",
	"HAKOPOD_BASE_DOMAIN", "HAKOPOD_SERVICE_USER",
	"HAKOPOD_SECRET_KEY_FILE",
};

static void
clear_env(void)
{
	size_t i;

	for (i = 0; i < nitems(hk_env); i++)
		unsetenv(hk_env[i]);
}

static void
srv_make(struct server_config *srv, enum srv_kind kind)
{
	struct config_diag d;
	char dom[256];
	int missing;

	memset(&d, 0, sizeof(d));
	(void)config_load_server(srv, "/dev/null", &d, &missing);
	switch (kind) {
	case SRV_SL:
		(void)config_set_flag(srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		break;
	case SRV_NOSL:
		break;
	case SRV_MAX2:
		(void)config_set_flag(srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		(void)config_set_flag(srv, "max_serverless_services", "2", &d);
		break;
	case SRV_ROOT:
		(void)config_set_flag(srv, "allow_root_services", "true", &d);
		break;
	case SRV_S6:
		(void)config_set_flag(srv, "s6_scandir", "/run/service", &d);
		/* FALLTHROUGH */
	case SRV_VOLDIRS:
		if (kind == SRV_VOLDIRS)
			(void)config_set_flag(srv, "volume_dirs",
			    "/srv/hk,/var/lib/d", &d);
		/* FALLTHROUGH */
	case SRV_NODES:
		(void)config_set_flag(srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		(void)strlcpy(srv->nodes[0].name, "worker-eu-1",
		    sizeof(srv->nodes[0].name));
		(void)strlcpy(srv->nodes[0].address, "10.0.0.2",
		    sizeof(srv->nodes[0].address));
		(void)strlcpy(srv->nodes[1].name, "tcp-1",
		    sizeof(srv->nodes[1].name));
		(void)strlcpy(srv->nodes[1].address, "10.0.0.3",
		    sizeof(srv->nodes[1].address));
		(void)strlcpy(srv->nodes[1].container_engine,
		    "tcp://10.0.0.3:2375", sizeof(srv->nodes[1].container_engine));
		(void)strlcpy(srv->nodes[2].name, "unix-1",
		    sizeof(srv->nodes[2].name));
		(void)strlcpy(srv->nodes[2].address, "127.0.0.4",
		    sizeof(srv->nodes[2].address));
		(void)strlcpy(srv->nodes[2].container_engine,
		    "unix:///run/unix-1.sock",
		    sizeof(srv->nodes[2].container_engine));
		(void)strlcpy(srv->nodes[2].container_network, "host",
		    sizeof(srv->nodes[2].container_network));
		srv->nnodes = 3;
		break;
	case SRV_NOENGINE:
		(void)config_set_flag(srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		(void)config_set_flag(srv, "container_engine", "", &d);
		break;
	case SRV_TCP:
		(void)config_set_flag(srv, "serverless_address",
		    "127.0.0.1:8082", &d);
		(void)config_set_flag(srv, "container_engine",
		    "tcp://10.0.0.9:2376", &d);
		break;
	case SRV_LONGDOM:
		memset(dom, 'a', 4 * 63);
		dom[62] = dom[125] = dom[188] = '.';
		dom[251] = '\0';
		(void)config_set_flag(srv, "base_domain", dom, &d);
		break;
	}
	if (d.count != 0)
		diag("srv_make: %s", d.msg[0]);
}

/* Writes text (len bytes) to tmpdir/name; returns the path (static). */
static const char *
write_file(const char *name, const char *text, size_t len)
{
	static char path[256];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	if ((f = fopen(path, "w")) == NULL ||
	    fwrite(text, 1, len, f) != len || fclose(f) != 0) {
		diag("write %s: %s", path, strerror(errno));
		exit(1);
	}
	return path;
}

static void
run_app_cases(void)
{
	struct server_config srv;
	struct config_diag d;
	struct app_config app;
	const struct app_case *c;
	size_t i, want;
	int rc;

	for (i = 0; i < nitems(app_cases); i++) {
		c = &app_cases[i];
		srv_make(&srv, c->srv);
		memset(&d, 0, sizeof(d));
		rc = app_parse(&app, "app.toml", c->toml, strlen(c->toml),
		    &srv, &d);
		want = c->want == NULL ? 0 : c->ndiag == 0 ? 1 : c->ndiag;
		if (c->want == NULL) {
			if (!ok(rc == 0 && d.count == 0, "app: %s: valid",
			    c->name))
				diag("rc %d, %zu: %s", rc, d.count,
				    d.count ? d.msg[0] : "");
		} else if (ok(rc == -1 && d.count == want,
		    "app: %s: %zu diagnostic(s)", c->name, want))
			is(d.msg[0], c->want, "app: %s: message", c->name);
		else {
			diag("rc %d, count %zu", rc, d.count);
			is(d.count ? d.msg[0] : "(none)", c->want,
			    "app: %s: message", c->name);
		}
		if (c->want != NULL && strcmp(c->name,
		    "three in line order") == 0) {
			for (want = 1; want < nitems(three); want++)
				is(d.msg[want], three[want],
				    "app: three in line order: %zu", want);
		}
		app_free(&app);
	}
}

/* Copies toml, each '~' made a run of 1100 'x'. */
static void
expand(char *dst, size_t dstsz, const char *toml)
{
	size_t o = 0;

	for (; *toml != '\0' && o + 1101 < dstsz; toml++) {
		if (*toml != '~') {
			dst[o++] = *toml;
			continue;
		}
		memset(dst + o, 'x', 1100);
		o += 1100;
	}
	dst[o] = '\0';
}

static void
run_srv_cases(void)
{
	struct server_config cfg;
	struct config_diag d;
	const struct srv_case *c;
	const char *path;
	char text[4096], want[1024];
	size_t i;
	int rc, missing;

	for (i = 0; i < nitems(srv_cases); i++) {
		c = &srv_cases[i];
		expand(text, sizeof(text), c->toml);
		path = write_file("hakopod.toml", text, strlen(text));
		memset(&d, 0, sizeof(d));
		missing = -1;
		rc = config_load_server(&cfg, path, &d, &missing);
		if (c->want == NULL) {
			if (!ok(rc == 0 && d.count == 0 && missing == 0,
			    "server: %s: valid", c->name))
				diag("%s", d.count ? d.msg[0] : "");
			continue;
		}
		(void)snprintf(want, sizeof(want), "%s:%s", path, c->want);
		if (!ok(rc == -1 && d.count == 1 && missing == 0,
		    "server: %s: one diagnostic", c->name))
			diag("rc %d count %zu missing %d", rc, d.count,
			    missing);
		is(d.count ? d.msg[0] : "(none)", want, "server: %s: message",
		    c->name);
	}
}

/* The index of a key in config_keys() (and in source[]). */
static size_t
key_at(const char *name)
{
	const struct config_key *k;
	size_t n, i;

	k = config_keys(&n);
	for (i = 0; i < n; i++)
		if (strcmp(k[i].name, name) == 0)
			return i;
	diag("no key %s", name);
	exit(1);
}

static void
test_defaults(void)
{
	static const char *const names[] = {
		"allow_root_services", "base_domain", "cold_start_header",
		"container_engine",
		"container_network", "container_tls_ca", "container_tls_cert",
		"container_tls_key", "events_max_age_days", "events_max_rows",
		"freezer", "keep_revisions", "kubernetes_config",
		"kubernetes_namespace", "kubernetes_service_address",
		"max_body_bytes",
		"max_concurrent_requests",
		"max_concurrent_starts", "max_serverless_services",
		"registry_auth_file", "request_log", "requests_max_age_days", "requests_max_rows",
		"runs_body_bytes", "runs_max_age_days", "runs_max_rows",
		"runtime_dir", "s6_scandir", "scale_grace_seconds",
		"secret_key_file",
		"serverless_address",
		"serverless_listen",
		"service_log_dir", "service_log_files", "service_log_size",
		"service_user", "spool_dir", "state", "time_unit_ms",
		"trusted_proxies",
		"volume_dirs",
		"waiting_page",
	};
	const struct config_key *k;
	struct server_config cfg;
	struct config_diag d;
	size_t n, i;
	int rc, missing, sorted = 1, named = 1;

	k = config_keys(&n);
	isint(n, nitems(names), "config_keys: the number of keys");
	for (i = 0; i < n && i < nitems(names); i++) {
		if (strcmp(k[i].name, names[i]) != 0)
			named = 0;
		if (i > 0 && strcmp(k[i - 1].name, k[i].name) >= 0)
			sorted = 0;
	}
	ok(named && sorted, "config_keys: the keys, alphabetical");
	is(k[key_at("base_domain")].env, "HAKOPOD_BASE_DOMAIN",
	    "config_keys: env of base_domain");
	i = key_at("service_user");
	ok(strcmp(k[i].env, "HAKOPOD_SERVICE_USER") == 0 &&
	    k[i].reloadable == 1 && k[i].defval[0] == '\0',
	    "config_keys: service_user: env, reloadable, unset");
	i = key_at("allow_root_services");
	ok(k[i].env == NULL && k[i].reloadable == 1 &&
	    strcmp(k[i].defval, "false") == 0,
	    "config_keys: allow_root_services: no env, reloadable, false");
	ok(k[key_at("max_body_bytes")].env == NULL,
	    "config_keys: max_body_bytes has no env");
	is(k[key_at("state")].defval, "sqlite:///var/lib/hakopod/state.db",
	    "config_keys: default of state");
	i = key_at("container_engine");
	ok(k[i].env == NULL && k[i].reloadable == 0 &&
	    strcmp(k[i].defval, "unix:///var/run/docker.sock") == 0,
	    "config_keys: container_engine: no env, not reloadable, "
	    "the Docker socket");
	ok(k[key_at("state")].reloadable == 0 &&
	    k[key_at("max_concurrent_requests")].reloadable == 1,
	    "config_keys: state not reloadable, max_concurrent_requests is");
	i = key_at("time_unit_ms");
	ok(k[i].env == NULL && k[i].reloadable == 0 &&
	    strcmp(k[i].defval, "1000") == 0,
	    "config_keys: time_unit_ms: no env, not reloadable, 1000");
	i = key_at("s6_scandir");
	ok(k[i].env == NULL && k[i].reloadable == 0 &&
	    k[i].defval[0] == '\0',
	    "config_keys: s6_scandir: no env, not reloadable, unset");

	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, "/dev/null", &d, &missing);
	ok(rc == 0 && d.count == 0, "empty file: loads");
	is(cfg.path, "/dev/null", "empty file: path");
	is(cfg.serverless_address, "", "default serverless_address unset");
	is(cfg.serverless_listen, "", "default serverless_listen unset");
	is(config_listen_address(&cfg), "", "listen address unset");
	is(cfg.state, "sqlite:///var/lib/hakopod/state.db", "default state");
	is(cfg.runtime_dir, "/run/hakopod", "default runtime_dir");
	is(cfg.base_domain, "localhost", "default base_domain");
	isint(cfg.max_concurrent_requests, 128, "default requests");
	isint(cfg.max_concurrent_starts, 2, "default starts");
	isint(cfg.max_body_bytes, 4194304, "default body bytes");
	isint(cfg.max_serverless_services, 512, "default serverless services");
	isint(cfg.time_unit_ms, 1000, "default time_unit_ms: one second");
	is(cfg.service_user, "", "default service_user unset");
	isint(cfg.allow_root_services, 0, "default allow_root_services false");
	isint(cfg.request_log, 1, "default request_log: on");
	is(cfg.container_engine, "unix:///var/run/docker.sock",
	    "default container_engine");
	isint(cfg.nnodes, 0, "default: no nodes");
	for (i = 0; i < n; i++)
		if (cfg.source[i] != CONFIG_SRC_DEFAULT)
			break;
	isint(i, n, "every source is DEFAULT");

	/* no file at all: the default path, when this machine has none */
	if (access(CONFIG_DEFAULT_PATH, F_OK) == 0 || errno != ENOENT)
		skip(3, CONFIG_DEFAULT_PATH " exists here");
	else {
		memset(&d, 0, sizeof(d));
		missing = -1;
		rc = config_load_server(&cfg, NULL, &d, &missing);
		ok(rc == 0 && d.count == 0 && missing == 0,
		    "no default file: defaults");
		is(cfg.path, "", "no default file: path empty");
		isint(cfg.max_concurrent_requests, 128,
		    "no default file: default value");
	}
}

/* The retention keys of hk-events: defaults, file, no env, SIGHUP. */
/*
 * SIGHUP: reloadable keys take the file's new values, the others keep
 * theirs until a restart, and a file that does not load changes nothing.
 */
static void
test_reload(void)
{
	static const char one[] = "[server]\nstate = \"sqlite:///a.db\"\n"
	    "max_concurrent_starts = 2\n";
	static const char two[] = "[server]\nstate = \"sqlite:///b.db\"\n"
	    "max_concurrent_starts = 5\nrequest_log = false\n";
	static const char bad[] = "[server]\nmax_concurrent_starts = 0\n";
	struct server_config cfg, before;
	struct config_diag d;
	const char *path;

	clear_env();
	memset(&d, 0, sizeof(d));
	path = write_file("reload.toml", one, sizeof(one) - 1);
	ok(config_load_server(&cfg, path, &d, NULL) == 0, "reload: loads");
	(void)write_file("reload.toml", two, sizeof(two) - 1);
	isint(config_reload(&cfg, path), 0, "reload: a good file reloads");
	isint(cfg.max_concurrent_starts, 5, "reload: a reloadable key changes");
	isint(cfg.request_log, 0, "reload: so does request_log");
	is(cfg.state, "sqlite:///a.db", "reload: state waits for a restart");
	memcpy(&before, &cfg, sizeof(cfg));
	(void)write_file("reload.toml", bad, sizeof(bad) - 1);
	isint(config_reload(&cfg, path), -1, "reload: a bad file is refused");
	ok(memcmp(&before, &cfg, sizeof(cfg)) == 0,
	    "reload: and changes nothing");
	/* A key set by a flag keeps the flag's value over the file's. */
	(void)write_file("reload.toml", two, sizeof(two) - 1);
	ok(config_set_flag(&cfg, "max_concurrent_starts", "7", &d) == 0,
	    "reload: a flag sets a key");
	isint(config_reload(&cfg, path), 0, "reload: with a flag, reloads");
	isint(cfg.max_concurrent_starts, 7, "reload: the flag's value holds");
	isint(cfg.request_log, 0, "reload: the file's other keys apply");
}

/*
 * [nodes.NAME]: read in file order, found by name, printed by -n -v,
 * taken again by SIGHUP; at most CONFIG_NODES_MAX of them.
 */
static void
test_nodes(void)
{
	static const char text[] = "[server]\nserverless_address = "
	    "\"127.0.0.1:8082\"\n"
	    "[nodes.worker-eu-1]\naddress = \"10.0.0.2\"\n"
	    "container_engine = \"tcp://10.0.0.2:2375\"\n"
	    "container_network = \"host\"\ncontainer_tls_ca = \"/dev/null\"\n"
	    "container_tls_cert = \"/dev/null\"\n"
	    "container_tls_key = \"/dev/null\"\n"
	    "[nodes.b]\naddress = \"fd00::3\"\n";
	static const char fewer[] = "[nodes.c]\naddress = \"127.0.0.3\"\n";
	struct server_config cfg;
	struct config_diag d;
	const struct config_node *n;
	char many[8192], want[512], *out = NULL;
	const char *path;
	size_t len = 0, o, i;
	FILE *fp;

	clear_env();
	memset(&d, 0, sizeof(d));
	path = write_file("nodes.toml", text, sizeof(text) - 1);
	ok(config_load_server(&cfg, path, &d, NULL) == 0 && cfg.nnodes == 2,
	    "nodes: two read");
	ok(strcmp(cfg.nodes[0].name, "worker-eu-1") == 0 &&
	    strcmp(cfg.nodes[1].name, "b") == 0 && cfg.nodes[0].line == 3 &&
	    cfg.nodes[1].line == 10, "nodes: in file order, with their lines");
	n = config_node_find(&cfg, "worker-eu-1");
	ok(n != NULL && strcmp(n->address, "10.0.0.2") == 0 &&
	    strcmp(n->container_engine, "tcp://10.0.0.2:2375") == 0,
	    "nodes: found by name, address and engine");
	n = config_node_find(&cfg, "b");
	ok(n != NULL && strcmp(n->address, "fd00::3") == 0 &&
	    n->container_engine[0] == '\0',
	    "nodes: an IPv6 address; no engine unless given");
	ok(config_node_find(&cfg, "c") == NULL &&
	    config_node_find(&cfg, "worker") == NULL,
	    "nodes: an unknown name is not found");
	fp = open_memstream(&out, &len);
	config_print(fp, &cfg);
	fclose(fp);
	ok(strstr(out, "\nnodes.worker-eu-1.address = \"10.0.0.2\" (file)\n"
	    "nodes.worker-eu-1.container_engine = \"tcp://10.0.0.2:2375\" "
	    "(file)\nnodes.worker-eu-1.container_network = \"host\" (file)\n"
	    "nodes.worker-eu-1.container_tls_ca = \"/dev/null\" (file)\n"
	    "nodes.worker-eu-1.container_tls_cert = \"/dev/null\" (file)\n"
	    "nodes.worker-eu-1.container_tls_key = \"/dev/null\" (file)\n"
	    "nodes.b.address = \"fd00::3\" (file)\n"
	    "nodes.b.container_engine = \"\" (default)\n"
	    "nodes.b.container_network = \"bridge\" (default)\n"
	    "nodes.b.container_tls_ca = \"\" (default)\n") != NULL,
	    "nodes: -n -v prints each node's keys after [server]'s");
	free(out);
	(void)write_file("nodes.toml", fewer, sizeof(fewer) - 1);
	ok(config_reload(&cfg, path) == 0 && cfg.nnodes == 1 &&
	    strcmp(cfg.nodes[0].name, "c") == 0, "nodes: SIGHUP takes them");

	o = 0;
	for (i = 1; i <= CONFIG_NODES_MAX + 1; i++)
		o += snprintf(many + o, sizeof(many) - o,
		    "[nodes.n%zu]\naddress = \"10.0.0.%zu\"\n", i, i);
	path = write_file("many.toml", many, o);
	memset(&d, 0, sizeof(d));
	ok(config_load_server(&cfg, path, &d, NULL) == -1 && d.count == 1 &&
	    cfg.nnodes == CONFIG_NODES_MAX, "nodes: one too many is refused");
	(void)snprintf(want, sizeof(want), "%s:%d: nodes.n%d: too many nodes "
	    "(at most %d)", path, 2 * CONFIG_NODES_MAX + 1,
	    CONFIG_NODES_MAX + 1, CONFIG_NODES_MAX);
	is(d.count ? d.msg[0] : "", want, "nodes: and says how many may be");
}

static void
test_retention(void)
{
	static const struct {
		const char	*name, *defval;
	} keys[] = {
		{ "events_max_age_days", "30" },
		{ "events_max_rows", "100000" },
		{ "requests_max_age_days", "7" },
		{ "requests_max_rows", "1000000" },
	};
	static const char text[] = "[server]\nevents_max_rows = 5\n"
	    "events_max_age_days = 2\nrequests_max_rows = 7\n"
	    "requests_max_age_days = 3\n";
	const struct config_key *k;
	struct server_config cfg;
	struct config_diag d;
	size_t n, i;
	int rc, missing, good = 1;

	k = config_keys(&n);
	for (i = 0; i < nitems(keys); i++)
		good &= k[key_at(keys[i].name)].env == NULL &&
		    k[key_at(keys[i].name)].reloadable == 1 &&
		    strcmp(k[key_at(keys[i].name)].defval,
		    keys[i].defval) == 0;
	ok(good, "retention keys: no env, reloadable, their defaults");
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, "/dev/null", &d, &missing);
	ok(rc == 0 && cfg.events_max_rows == 100000 &&
	    cfg.events_max_age_days == 30 && cfg.requests_max_rows == 1000000 &&
	    cfg.requests_max_age_days == 7, "retention keys: default values");
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, write_file("ret.toml", text,
	    strlen(text)), &d, &missing);
	ok(rc == 0 && cfg.events_max_rows == 5 &&
	    cfg.events_max_age_days == 2 && cfg.requests_max_rows == 7 &&
	    cfg.requests_max_age_days == 3 &&
	    cfg.source[key_at("events_max_rows")] == CONFIG_SRC_FILE,
	    "retention keys: read from the file");
}

static void
test_missing(void)
{
	struct server_config cfg;
	struct app_config app;
	struct config_diag d;
	char path[256], want[1024];
	int rc, missing;

	(void)snprintf(path, sizeof(path), "%s/absent.toml", tmpdir);
	(void)snprintf(want, sizeof(want),
	    "%s: unable to open: No such file or directory", path);

	memset(&d, 0, sizeof(d));
	missing = 0;
	rc = config_load_server(&cfg, path, &d, &missing);
	ok(rc == -1 && missing == 1 && d.count == 1,
	    "named operator file missing: -1, *missing");
	is(d.msg[0], want, "named operator file missing: message");

	setenv("HAKOPOD_CONFIG", path, 1);
	memset(&d, 0, sizeof(d));
	missing = 0;
	rc = config_load_server(&cfg, NULL, &d, &missing);
	ok(rc == -1 && missing == 1 && d.count == 1,
	    "$HAKOPOD_CONFIG missing: -1, *missing");
	is(d.msg[0], want, "$HAKOPOD_CONFIG missing: message");
	unsetenv("HAKOPOD_CONFIG");

	memset(&d, 0, sizeof(d));
	missing = 0;
	rc = app_load(&app, path, &cfg, &d, &missing);
	ok(rc == -1 && missing == 1 && d.count == 1,
	    "app file missing: -1, *missing");
	is(d.msg[0], want, "app file missing: message");
	app_free(&app);

	memset(&d, 0, sizeof(d));
	missing = 0;
	rc = app_load(&app, tmpdir, &cfg, &d, &missing);
	(void)snprintf(want, sizeof(want), "%s: unable to read: %s", tmpdir,
	    strerror(EISDIR));
	ok(rc == -1 && missing == 1, "app file is a directory: -1, *missing");
	is(d.msg[0], want, "app file is a directory: message");
	app_free(&app);

	memset(&d, 0, sizeof(d));
	missing = 0;
	rc = config_load_server(&cfg, tmpdir, &d, &missing);
	ok(rc == -1 && missing == 1 && d.count == 1,
	    "operator file is a directory: -1, *missing");
	is(d.msg[0], want, "operator file is a directory: message");
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
test_sizes(void)
{
	struct server_config cfg;
	struct app_config app;
	struct config_diag d;
	char path[256], want[1024], *buf;
	double t0;
	int fd, rc, missing;
	size_t hl;

	/* 10 MB, sparse: refused from its size, before any read */
	(void)snprintf(path, sizeof(path), "%s/big.toml", tmpdir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    ftruncate(fd, 10 * 1024 * 1024) == -1 || close(fd) == -1) {
		diag("%s: %s", path, strerror(errno));
		exit(1);
	}
	(void)snprintf(want, sizeof(want),
	    "%s: too large: over 1048576 bytes", path);
	t0 = now();
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, path, &d, &missing);
	ok(rc == -1 && missing == 0 && d.count == 1,
	    "10 MB operator file: refused");
	is(d.msg[0], want, "10 MB operator file: message");
	memset(&d, 0, sizeof(d));
	rc = app_load(&app, path, &cfg, &d, &missing);
	ok(rc == -1 && missing == 0 && d.count == 1,
	    "10 MB app file: refused");
	is(d.msg[0], want, "10 MB app file: message");
	ok(now() - t0 < 0.5, "10 MB files: refused fast (%.3f s)",
	    now() - t0);
	app_free(&app);

	/* exactly CONFIG_MAX_FILE: fine; one more byte: refused */
	if ((buf = malloc(CONFIG_MAX_FILE + 1)) == NULL)
		exit(1);
	hl = strlen(SVC);
	memcpy(buf, SVC, hl);
	memset(buf + hl, ' ', CONFIG_MAX_FILE - hl);
	buf[hl] = '#';
	buf[CONFIG_MAX_FILE - 1] = '\n';
	srv_make(&cfg, SRV_SL);
	(void)write_file("max.toml", buf, CONFIG_MAX_FILE);
	(void)snprintf(path, sizeof(path), "%s/max.toml", tmpdir);
	memset(&d, 0, sizeof(d));
	rc = app_load(&app, path, &cfg, &d, &missing);
	ok(rc == 0 && d.count == 0, "app file of CONFIG_MAX_FILE bytes: loads");
	app_free(&app);
	buf[CONFIG_MAX_FILE - 1] = ' ';
	buf[CONFIG_MAX_FILE] = '\n';
	(void)write_file("max.toml", buf, CONFIG_MAX_FILE + 1);
	memset(&d, 0, sizeof(d));
	rc = app_load(&app, path, &cfg, &d, &missing);
	(void)snprintf(want, sizeof(want),
	    "%s: too large: over 1048576 bytes", path);
	ok(rc == -1 && d.count == 1, "app file one byte over: refused");
	is(d.msg[0], want, "app file one byte over: message");
	app_free(&app);
	free(buf);
}

static void
test_precedence(void)
{
	static const char text[] =
	    "# operator\n[server]\nstate = \"sqlite:///tmp/file.db\"\n"
	    "base_domain = \"Example.COM\"\nmax_concurrent_starts = 3\n"
	    "serverless_address = \"10.0.0.10:8082\"\ntime_unit_ms = 10\n";
	struct server_config cfg;
	struct config_diag d;
	const char *path;
	int rc, missing;

	path = write_file("prec.toml", text, strlen(text));
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, path, &d, &missing);
	ok(rc == 0 && d.count == 0, "file: loads");
	is(cfg.state, "sqlite:///tmp/file.db", "file: state");
	is(cfg.base_domain, "example.com", "file: base_domain lower-cased");
	isint(cfg.max_concurrent_starts, 3, "file: max_concurrent_starts");
	isint(cfg.time_unit_ms, 10, "file: time_unit_ms");
	ok(cfg.source[key_at("state")] == CONFIG_SRC_FILE &&
	    cfg.source[key_at("runtime_dir")] == CONFIG_SRC_DEFAULT,
	    "file: sources FILE and DEFAULT");
	is(config_listen_address(&cfg), "10.0.0.10:8082",
	    "listen address defaults to serverless_address");

	setenv("HAKOPOD_CONFIG", path, 1);
	setenv("HAKOPOD_STATE", "postgres://env/db", 1);
	setenv("HAKOPOD_RUNTIME_DIR", "", 1);	/* empty: ignored */
	setenv("HAKOPOD_SERVERLESS_LISTEN", "0.0.0.0:8082", 1);
	setenv("HAKOPOD_TIME_UNIT_MS", "1", 1);	/* no such variable */
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, NULL, &d, &missing);
	ok(rc == 0 && d.count == 0, "env: loads $HAKOPOD_CONFIG");
	ok(cfg.time_unit_ms == 10 &&
	    cfg.source[key_at("time_unit_ms")] == CONFIG_SRC_FILE,
	    "env: time_unit_ms is not taken from the environment");
	unsetenv("HAKOPOD_TIME_UNIT_MS");
	is(cfg.path, path, "env: path from $HAKOPOD_CONFIG");
	is(cfg.state, "postgres://env/db", "env: overrides the file");
	ok(cfg.source[key_at("state")] == CONFIG_SRC_ENV, "env: source ENV");
	is(cfg.runtime_dir, "/run/hakopod", "env: empty variable ignored");
	ok(cfg.source[key_at("runtime_dir")] == CONFIG_SRC_DEFAULT,
	    "env: empty keeps DEFAULT");
	is(config_listen_address(&cfg), "0.0.0.0:8082",
	    "env: serverless_listen used for listening");

	memset(&d, 0, sizeof(d));
	rc = config_set_flag(&cfg, "state", "sqlite:///flag.db", &d);
	ok(rc == 0 && d.count == 0, "flag: set");
	is(cfg.state, "sqlite:///flag.db", "flag: overrides env");
	ok(cfg.source[key_at("state")] == CONFIG_SRC_FLAG,
	    "flag: source FLAG");
	rc = config_set_flag(&cfg, "server.max_body_bytes", "0", &d);
	ok(rc == 0 && cfg.max_body_bytes == 0 &&
	    cfg.source[key_at("max_body_bytes")] == CONFIG_SRC_FLAG,
	    "flag: server.KEY form");
	rc = config_set_flag(&cfg, "serverless_address", "", &d);
	ok(rc == 0 && cfg.serverless_address[0] == '\0',
	    "flag: empty unsets serverless_address");

	rc = config_set_flag(&cfg, "max_concurrent_starts", "0", &d);
	ok(rc == -1, "flag: out of range refused");
	is(d.msg[0], "command line: server.max_concurrent_starts: "
	    "must be between 1 and 64", "flag: out of range message");
	rc = config_set_flag(&cfg, "max_concurrent_starts", "+3", &d);
	is(d.msg[1], "command line: server.max_concurrent_starts: "
	    "must be an integer", "flag: not an integer");
	rc = config_set_flag(&cfg, "listen", "x", &d);
	ok(rc == -1, "flag: unknown key refused");
	is(d.msg[2], "command line: server.listen: unknown key",
	    "flag: unknown key message");
	isint(cfg.max_concurrent_starts, 3, "flag: refused values not kept");

	setenv("HAKOPOD_SERVICE_USER", "nobody:nogroup", 1);
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, NULL, &d, &missing);
	ok(rc == 0 && strcmp(cfg.service_user, "nobody:nogroup") == 0 &&
	    cfg.source[key_at("service_user")] == CONFIG_SRC_ENV,
	    "env: HAKOPOD_SERVICE_USER sets service_user");

	setenv("HAKOPOD_SERVERLESS_ADDRESS", "nope", 1);
	setenv("HAKOPOD_BASE_DOMAIN", "-bad", 1);
	setenv("HAKOPOD_SERVICE_USER", "hk-no-such-user", 1);
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&cfg, NULL, &d, &missing);
	ok(rc == -1 && d.count == 3, "env: invalid values refused");
	is(d.msg[0], "HAKOPOD_BASE_DOMAIN: server.base_domain: "
	    "invalid domain name", "env: base_domain message");
	is(d.msg[1], "HAKOPOD_SERVERLESS_ADDRESS: server.serverless_address: "
	    "must be host:port", "env: serverless_address message");
	is(d.msg[2], "HAKOPOD_SERVICE_USER: server.service_user: "
	    "no such user \"hk-no-such-user\"", "env: service_user message");
	clear_env();
}

static void
test_values(void)
{
	static const char text[] = HEAD
	    "[services.api]\n"
	    "command = [\"python3\", \"h.py\", \"\"]\n"
	    "directory = \"sub/../fn/./\"\n"
	    "port = 8080\npublic = true\nsize = \"small\"\n"
	    "hosts = [\"API.Example.com\", \"b.example\"]\n"
	    "readiness = \"http:/healthz?full=1\"\n"
	    "environment = { B = \"2\", A = \"1\", _x = \"\" }\n"
	    "[services.api.serverless]\nmin_replicas = 1\nidle_seconds = 60\n"
	    "startup_timeout_seconds = 10\nrequest_timeout_seconds = 20\n"
	    "max_concurrency = 4\nrequest_buffering = false\n"
	    "waiting_page_after_ms = 2500\n"
	    "idle_action = \"suspend\"\nsuspend_max_seconds = 120\n"
	    "[services.db]\ndirectory = \"//srv/db\"\n"
	    "readiness = \"socket\"\ncommand = [\"postgres\"]\n"
	    "backend = \"exec\"\n"
	    "[services.n]\ncommand = [\"n\"]\nreadiness = \"notify\"\n";
	struct server_config srv;
	struct app_config app;
	struct config_diag d;
	const struct service_spec *s;
	int rc;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&app, "/srv/apps/fn.toml", text, strlen(text), &srv,
	    &d);
	ok(rc == 0 && d.count == 0, "values: valid");
	if (rc != 0) {
		diag("%s", d.msg[0]);
		unreached(29, "not parsed");
		return;
	}
	is(app.name, "fn", "values: app name");
	is(app.path, "/srv/apps/fn.toml", "values: path");
	isint(app.nservices, 3, "values: three services in file order");
	isint(app_count_serverless(&app), 1, "values: one serverless");
	s = &app.services[0];
	is(s->name, "api", "values: service name");
	isint(s->line, 3, "values: service line");
	ok(s->image == NULL, "values: no image");
	ok(s->ncommand == 3 && s->command[3] == NULL &&
	    strcmp(s->command[1], "h.py") == 0 && s->command[2][0] == '\0',
	    "values: command, NULL-terminated");
	is(s->directory, "/srv/apps/fn", "values: relative directory");
	isint(s->port, 8080, "values: port");
	ok(s->public_ == 1, "values: public");
	is(s->size, "small", "values: size");
	ok(s->nhosts == 2 && strcmp(s->hosts[0], "api.example.com") == 0,
	    "values: hosts lower-cased");
	ok(s->readiness == READY_HTTP && s->readiness_path != NULL &&
	    strcmp(s->readiness_path, "/healthz?full=1") == 0,
	    "values: readiness http:/path");
	ok(s->node_name == NULL && s->backend == BACKEND_EXEC,
	    "values: exec, on the default node");
	ok(s->nenv == 3 && strcmp(s->env[0].name, "B") == 0 &&
	    strcmp(s->env[1].value, "1") == 0 && s->env[2].value[0] == '\0',
	    "values: environment in file order");
	ok(s->serverless && s->policy.min_replicas == 1 &&
	    s->policy.idle_seconds == 60 &&
	    s->policy.startup_timeout_seconds == 10 &&
	    s->policy.request_timeout_seconds == 20 &&
	    s->policy.max_concurrency == 4 &&
	    s->policy.request_buffering == 0 &&
	    s->policy.waiting_page_after_ms == 2500 &&
	    s->policy.idle_action == IDLE_SUSPEND &&
	    s->policy.suspend_max_seconds == 120, "values: policy");
	is(s->spec_json, "{\"command\":[\"python3\",\"h.py\",\"\"],"
	    "\"directory\":\"/srv/apps/fn\",\"environment\":{\"A\":\"1\","
	    "\"B\":\"2\",\"_x\":\"\"},\"hosts\":[\"api.example.com\","
	    "\"b.example\"],\"image\":null,\"name\":\"api\","
	    "\"node_name\":null,\"port\":8080,\"public\":true,"
	    "\"readiness\":\"http:/healthz?full=1\",\"replicas\":1,"
	    "\"serverless\":{\"idle_action\":\"suspend\","
	    "\"idle_seconds\":60,\"max_concurrency\":4,"
	    "\"min_replicas\":1,\"request_buffering\":false,"
	    "\"request_timeout_seconds\":20,"
	    "\"startup_timeout_seconds\":10,\"suspend_max_seconds\":120,"
	    "\"waiting_page_after_ms\":2500},"
	    "\"size\":\"small\"}",
	    "values: spec_json");
	s = &app.services[1];
	is(s->directory, "/srv/db", "values: absolute directory normalized");
	ok(s->readiness == READY_SOCKET, "values: readiness socket");
	ok(s->ncommand == 1 && s->backend == BACKEND_EXEC && s->image == NULL,
	    "values: exec as written");
	ok(!s->serverless, "values: ordinary service");
	is(s->spec_json, "{\"command\":[\"postgres\"],"
	    "\"directory\":\"/srv/db\","
	    "\"environment\":{},\"hosts\":[\"db.fn.localhost\"],"
	    "\"image\":null,\"name\":\"db\",\"node_name\":null,"
	    "\"port\":0,\"public\":false,\"readiness\":\"socket\","
	    "\"replicas\":1,\"serverless\":null,\"size\":\"small\"}",
	    "values: spec_json, every default filled in, exec not written");
	s = &app.services[2];
	ok(s->readiness == READY_NOTIFY, "values: readiness notify");
	is(s->directory, "/srv/apps", "values: default directory");
	is(s->hosts[0], "n.fn.localhost", "values: default host");
	app_free(&app);
	ok(app.services == NULL && app.path == NULL, "app_free: cleared");
}

static void
test_defaults_app(void)
{
	struct server_config srv;
	struct app_config app;
	struct config_diag d;
	const struct service_spec *s;
	char cwd[PATH_MAX], want[PATH_MAX + 512];
	int rc;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	(void)config_set_flag(&srv, "base_domain", "fn.example", &d);
	rc = app_parse(&app, "app.toml", SLS, strlen(SLS), &srv, &d);
	ok(rc == 0, "defaults: valid");
	if (rc != 0) {
		unreached(11, "not parsed");
		return;
	}
	s = &app.services[0];
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		cwd[0] = '\0';
	is(s->directory, cwd, "defaults: directory is the file's, absolute");
	isint(s->port, 0, "defaults: port 0");
	ok(s->public_ == 1, "defaults: public as given");
	is(s->size, "small", "defaults: size small");
	isint(s->replicas, 1, "defaults: replicas 1");
	ok(s->nhosts == 1, "defaults: one host");
	is(s->hosts[0], "api.fn.fn.example",
	    "defaults: host service.app.base_domain");
	ok(s->readiness == READY_TCP && s->readiness_path == NULL,
	    "defaults: readiness tcp");
	ok(s->node_name == NULL && s->env == NULL && s->nenv == 0,
	    "defaults: no node_name, no environment");
	ok(s->policy.min_replicas == 0 && s->policy.idle_seconds == 300 &&
	    s->policy.startup_timeout_seconds == 60 &&
	    s->policy.request_timeout_seconds == 60 &&
	    s->policy.max_concurrency == 16 &&
	    s->policy.request_buffering == 1 &&
	    s->policy.waiting_page_after_ms == 0, "defaults: policy");
	(void)snprintf(want, sizeof(want), "{\"command\":[\"x\"],"
	    "\"directory\":\"%s\",\"environment\":{},"
	    "\"hosts\":[\"api.fn.fn.example\"],\"image\":null,"
	    "\"name\":\"api\",\"node_name\":null,\"port\":0,\"public\":true,"
	    "\"readiness\":\"tcp\",\"replicas\":1,\"serverless\":"
	    "{\"idle_seconds\":300,\"max_concurrency\":16,\"min_replicas\":0,"
	    "\"request_timeout_seconds\":60,\"startup_timeout_seconds\":60},"
	    "\"size\":\"small\"}", cwd);
	is(s->spec_json, want, "defaults: spec_json");
	app_free(&app);
}

/* The same service written two ways gives the same bytes. */
static void
test_stability(void)
{
	static const char a[] = HEAD
	    "[services.api]\ncommand = [\"x\"]\nport = 8080\n"
	    "backend_http2 = false\n"
	    "environment = { A = \"1\", B = \"2\" }\n";
	static const char b[] = "name = \"fn\"\n"
	    "# the same, reordered, with the defaults written out\n"
	    "schema_version = 1\n"
	    "[services.api]\n"
	    "port = 8080\n"
	    "size = \"small\"\nreplicas = 1\nreadiness = \"tcp\"\n"
	    "public = false\n"
	    "backend_http2 = false\ncommand = [ \"x\" ]\nbackend = \"exec\"\n"
	    "[services.api.environment]\nB = \"2\"\nA = \"1\"\n";
	static const char c[] = HEAD
	    "[services.api]\ncommand = [\"x\"]\nport = 8081\n"
	    "backend_http2 = false\n"
	    "environment = { A = \"1\", B = \"2\" }\n";
	static const char e[] = HEAD
	    "[services.api]\nimage = \"i\"\ncommand = [\"x\"]\n"
	    "backend = \"exec\"\n";
	struct server_config srv;
	struct app_config x, y, z;
	struct config_diag d;
	int rc;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&x, "/a/app.toml", a, strlen(a), &srv, &d);
	rc |= app_parse(&y, "/a/app.toml", a, strlen(a), &srv, &d);
	rc |= app_parse(&z, "/a/./b/../app.toml", b, strlen(b), &srv, &d);
	ok(rc == 0 && d.count == 0, "stability: valid");
	if (rc == 0) {
		is(x.services[0].spec_json, y.services[0].spec_json,
		    "stability: same file, same spec_json");
		is(x.services[0].spec_json, z.services[0].spec_json,
		    "stability: reordered file, same spec_json");
		ok(strstr(x.services[0].spec_json, "\"backend_http2\":false")
		    != NULL, "stability: ordinary-only keys kept");
		ok(strstr(x.services[0].spec_json, "volumes") == NULL,
		    "stability: no volumes, no \"volumes\": specs of before "
		    "them keep their bytes");
	} else
		unreached(4, "not parsed");
	app_free(&x);
	app_free(&y);
	app_free(&z);
	rc = app_parse(&x, "/a/app.toml", a, strlen(a), &srv, &d);
	rc |= app_parse(&z, "/a/app.toml", c, strlen(c), &srv, &d);
	ok(rc == 0 && strcmp(x.services[0].spec_json,
	    z.services[0].spec_json) != 0, "stability: a change shows");
	app_free(&x);
	app_free(&z);
	/*
	 * An image beside a command ran on exec before backends had names,
	 * and was kept unused: it is refused now (its stored spec still
	 * decodes, test_spec_decode()).
	 */
	memset(&d, 0, sizeof(d));
	rc = app_parse(&x, "/a/app.toml", e, strlen(e), &srv, &d);
	ok(rc == -1 && d.count == 1 && strstr(d.msg[0],
	    "services.api.image: not used by backend \"exec\"") != NULL,
	    "stability: image, command and backend = exec: refused now");
	app_free(&x);
}

/*
 * An ordinary service's startup_timeout_seconds: in spec_json only when
 * not 60 (an older spec keeps its bytes), read back by spec_decode(), 60
 * when absent; a stored value out of its range does not decode.
 */
static void
test_ordinary_start(void)
{
	static const char dflt[] = SVC;
	static const char same[] = SVC "startup_timeout_seconds = 60\n";
	static const char slow[] = SVC "startup_timeout_seconds = 900\n";
	struct server_config srv;
	struct app_config x, y, z;
	struct service_spec sp;
	struct config_diag d;
	char err[SPEC_ERR_LEN];
	int rc;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&x, "/a/app.toml", dflt, strlen(dflt), &srv, &d);
	rc |= app_parse(&y, "/a/app.toml", same, strlen(same), &srv, &d);
	rc |= app_parse(&z, "/a/app.toml", slow, strlen(slow), &srv, &d);
	if (!ok(rc == 0 && d.count == 0, "startup_timeout_seconds: valid")) {
		unreached(5, "not parsed");
		return;
	}
	is(x.services[0].spec_json, y.services[0].spec_json,
	    "startup_timeout_seconds = 60: the spec of none");
	ok(strstr(z.services[0].spec_json,
	    "\"startup_timeout_seconds\":900") != NULL,
	    "startup_timeout_seconds = 900 is stored");
	rc = spec_decode(z.services[0].spec_json, &sp, err, sizeof(err));
	ok(rc == 0 && sp.ordinary_start_timeout == 900,
	    "startup_timeout_seconds: read back");
	if (rc == 0)
		spec_clear(&sp);
	rc = spec_decode(x.services[0].spec_json, &sp, err, sizeof(err));
	ok(rc == 0 && sp.ordinary_start_timeout == 60,
	    "startup_timeout_seconds: 60 when absent");
	if (rc == 0)
		spec_clear(&sp);
	ok(spec_decode("{\"name\":\"a\",\"port\":0,\"hosts\":[],"
	    "\"command\":[\"x\"],\"startup_timeout_seconds\":0}", &sp, err,
	    sizeof(err)) == -1, "startup_timeout_seconds 0 does not decode");
	app_free(&x);
	app_free(&y);
	app_free(&z);
}

/*
 * image_pull: in spec_json only when not "missing" (an older spec keeps
 * its bytes), read back by spec_decode(); a stored value hk does not
 * know is a spec it cannot read.
 */
#define DIGEST64 "0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"
static void
test_image_pull(void)
{
	static const char dflt[] = HEAD "[services.api]\nimage = \"i\"\n";
	static const char miss[] = HEAD "[services.api]\nimage = \"i\"\n"
	    "image_pull = \"missing\"\n";
	static const char alw[] = HEAD "[services.api]\nimage = \"i\"\n"
	    "image_pull = \"always\"\n";
	struct server_config srv;
	struct app_config x, y, z;
	struct service_spec sp;
	struct config_diag d;
	char err[SPEC_ERR_LEN];
	int rc;

	srv_make(&srv, SRV_SL);
	(void)config_set_flag(&srv, "container_engine",
	    "unix:///run/podman.sock", &d);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&x, "/a/app.toml", dflt, strlen(dflt), &srv, &d);
	rc |= app_parse(&y, "/a/app.toml", miss, strlen(miss), &srv, &d);
	rc |= app_parse(&z, "/a/app.toml", alw, strlen(alw), &srv, &d);
	if (!ok(rc == 0 && d.count == 0, "image_pull: valid")) {
		unreached(9, "not parsed");
		return;
	}
	is(x.services[0].spec_json, y.services[0].spec_json,
	    "image_pull = \"missing\": the spec of no image_pull");
	ok(strstr(x.services[0].spec_json, "image_pull") == NULL,
	    "image_pull: the default is not stored");
	ok(strstr(z.services[0].spec_json, "\"image_pull\":\"always\"") !=
	    NULL, "image_pull = \"always\" is stored");
	rc = spec_decode(z.services[0].spec_json, &sp, err, sizeof(err));
	ok(rc == 0 && sp.image_pull == IMAGE_PULL_ALWAYS,
	    "image_pull: read back");
	if (rc == 0)
		spec_clear(&sp);
	ok(spec_decode("{\"name\":\"a\",\"port\":0,\"hosts\":[],"
	    "\"image\":\"i\",\"image_pull\":\"often\"}", &sp, err,
	    sizeof(err)) == -1, "image_pull: an unknown value does not decode");
	/* image_digest: what hk apply pins, a change of the spec */
	ok(spec_set_image_digest(&x.services[0], "sha256:abc") == -1,
	    "image_digest: not a digest, refused");
	ok(spec_set_image_digest(&x.services[0], "sha256:" DIGEST64) == 0 &&
	    strstr(x.services[0].spec_json, "\"image_digest\":\"sha256:"
	    DIGEST64 "\"") != NULL && strcmp(x.services[0].spec_json,
	    y.services[0].spec_json) != 0,
	    "image_digest: pinned, the spec changes");
	rc = spec_decode(x.services[0].spec_json, &sp, err, sizeof(err));
	ok(rc == 0 && sp.image_digest != NULL && strcmp(sp.image_digest,
	    "sha256:" DIGEST64) == 0, "image_digest: read back");
	if (rc == 0)
		spec_clear(&sp);
	ok(spec_decode("{\"name\":\"a\",\"port\":0,\"hosts\":[],"
	    "\"image\":\"i\",\"image_digest\":\"latest\"}", &sp, err,
	    sizeof(err)) == -1, "image_digest: not a digest, does not decode");
	app_free(&x);
	app_free(&y);
	app_free(&z);
}

/* What app.c writes (spec_encode()), spec_decode() reads back. */
static void
test_spec_decode(void)
{
	struct server_config srv;
	struct service_spec back;
	struct app_config app;
	struct config_diag d;
	const struct service_spec *s;
	char err[SPEC_ERR_LEN];
	const char *text = SLX("hosts = [\"a.example\"]\n")
	    "idle_seconds = 45\nidle_action = \"suspend\"\n"
	    "suspend_max_seconds = 90\n"
	    "[services.w]\ncommand = [\"w\", \"-v\"]\nreadiness = \"http:/h\"\n"
	    "environment = { K = \"v\" }\nuser = \"nobody:nogroup\"\n";
	size_t i;
	int rc, same = 1;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&app, "/x/app.toml", text, strlen(text), &srv, &d);
	ok(rc == 0, "decode: valid");
	for (i = 0; rc == 0 && i < app.nservices; i++) {
		s = &app.services[i];
		if (spec_decode(s->spec_json, &back, err, sizeof(err)) == -1) {
			diag("%s", err);
			same = 0;
			continue;
		}
		if (strcmp(back.name, s->name) != 0 ||
		    back.serverless != s->serverless ||
		    back.policy.idle_seconds != s->policy.idle_seconds ||
		    back.policy.idle_action != s->policy.idle_action ||
		    back.policy.suspend_max_seconds !=
		    s->policy.suspend_max_seconds ||
		    back.readiness != s->readiness ||
		    back.nhosts != s->nhosts || back.nenv != s->nenv ||
		    back.ncommand != s->ncommand ||
		    strcmp(back.directory, s->directory) != 0 ||
		    (back.user == NULL) != (s->user == NULL) ||
		    (back.user != NULL && strcmp(back.user, s->user) != 0))
			same = 0;
		if (i == 0 && strstr(s->spec_json, "\"user\"") != NULL)
			same = 0;	/* unset: not in the JSON at all */
		spec_clear(&back);
	}
	ok(rc == 0 && same, "decode: spec_decode() reads spec_json back");
	app_free(&app);
	test_image_pull();
	test_ordinary_start();
	test_decode_backend();
	test_decode_volumes();
}

/*
 * volumes: stored canonical, in file order, only when there are some,
 * and read back; a stored entry that is not one rejects the spec.
 */
static void
test_decode_volumes(void)
{
	static const char text[] = SVCI "volumes = [\"pg:/var/lib/pg/\", "
	    "\"/srv/hk/./x:/x:ro\", \"c:/c:rw\"]\n";
	static const char *const bad[] = {
		"[\"pg\"]", "[\"pg:/a/../b\"]", "[\"/srv:/\"]", "[]", "[1]",
		"\"pg:/a\"",
	};
	struct server_config srv;
	struct service_spec back;
	struct app_config app;
	struct config_diag d;
	char err[SPEC_ERR_LEN], json[256];
	size_t i;
	int rc;

	srv_make(&srv, SRV_VOLDIRS);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&app, "/x/app.toml", text, strlen(text), &srv, &d);
	ok(rc == 0, "volumes: valid");
	if (rc != 0)
		return;
	ok(strstr(app.services[0].spec_json, "\"volumes\":[\"pg:/var/lib/pg\","
	    "\"/srv/hk/x:/x:ro\",\"c:/c\"]") != NULL,
	    "volumes: stored canonical, in file order (%s)",
	    app.services[0].spec_json);
	rc = spec_decode(app.services[0].spec_json, &back, err, sizeof(err));
	ok(rc == 0 && back.nvolumes == 3 && !back.volumes[0].bind &&
	    strcmp(back.volumes[0].source, "pg") == 0 &&
	    strcmp(back.volumes[0].target, "/var/lib/pg") == 0 &&
	    back.volumes[1].bind && back.volumes[1].read_only &&
	    strcmp(back.volumes[1].source, "/srv/hk/x") == 0 &&
	    !back.volumes[2].read_only, "volumes: read back");
	if (rc == 0)
		spec_clear(&back);
	app_free(&app);
	for (i = 0; i < nitems(bad); i++) {
		snprintf(json, sizeof(json), "{\"name\":\"a\",\"image\":\"x\","
		    "\"port\":0,\"volumes\":%s}", bad[i]);
		rc = spec_decode(json, &back, err, sizeof(err));
		ok(rc == -1, "volumes: stored %s is rejected", bad[i]);
		if (rc == 0)
			spec_clear(&back);
	}
}

/*
 * idle_check and its maximum in spec_json only when set (a spec stored
 * before them keeps its bytes), read back by spec_decode(), which refuses
 * a check that is not one.
 */
static void
test_spec_idle_check(void)
{
	static const char *const bad[] = {
		"\"tcp\"", "\"http:busy\"", "\"http:/a b\"", "1",
	};
	struct server_config srv;
	struct service_spec back;
	struct app_config app;
	struct config_diag d;
	char err[SPEC_ERR_LEN], json[256];
	const char *text = SLS "idle_check = \"http:/busy\"\n"
	    "idle_check_max_seconds = 120\n"
	    "[services.b]\ncommand = [\"b\"]\npublic = true\n"
	    "[services.b.serverless]\n";
	size_t i;
	int rc;

	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&app, "/x/app.toml", text, strlen(text), &srv, &d);
	ok(rc == 0 && app.nservices == 2, "idle_check: valid");
	if (rc != 0)
		return;
	ok(strstr(app.services[0].spec_json, "\"idle_check\":\"http:/busy\","
	    "\"idle_check_max_seconds\":120,") != NULL,
	    "idle_check: in spec_json, as written");
	ok(strstr(app.services[1].spec_json, "idle_check") == NULL,
	    "idle_check: absent, not in spec_json at all");
	rc = spec_decode(app.services[0].spec_json, &back, err, sizeof(err));
	ok(rc == 0 && back.idle_check_path != NULL &&
	    strcmp(back.idle_check_path, "/busy") == 0 &&
	    back.policy.idle_check_max_seconds == 120,
	    "idle_check: read back");
	if (rc == 0)
		spec_clear(&back);
	rc = spec_decode(app.services[1].spec_json, &back, err, sizeof(err));
	ok(rc == 0 && back.idle_check_path == NULL &&
	    back.policy.idle_check_max_seconds == 600,
	    "idle_check: none, and the maximum's default");
	if (rc == 0)
		spec_clear(&back);
	app_free(&app);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(json, sizeof(json), "{\"name\":\"a\",\"port\":0,"
		    "\"command\":[\"x\"],\"serverless\":{\"min_replicas\":0,"
		    "\"idle_seconds\":30,\"startup_timeout_seconds\":60,"
		    "\"request_timeout_seconds\":60,\"max_concurrency\":16,"
		    "\"idle_check\":%s}}", bad[i]);
		ok(spec_decode(json, &back, err, sizeof(err)) == -1,
		    "idle_check: a stored %s is refused", bad[i]);
	}
}

/*
 * "backend" in a stored spec: absent, exec when there is a command (what
 * hk-scale always ran), else container; a name it does not know rejects
 * the spec rather than running it on another backend.
 */
static void
test_decode_backend(void)
{
	static const struct {
		const char	*fields;
		int		 want;	/* -1: rejected */
	} cases[] = {
		{ "\"command\":[\"x\"],\"image\":null", BACKEND_EXEC },
		{ "\"command\":[\"x\"],\"image\":\"i\"", BACKEND_EXEC },
		{ "\"command\":null,\"image\":\"i\"", BACKEND_CONTAINER },
		{ "\"command\":[\"x\"],\"image\":\"i\","
		    "\"backend\":\"container\"", BACKEND_CONTAINER },
		{ "\"command\":[\"x\"],\"backend\":\"s6\"", BACKEND_S6 },
		{ "\"command\":[\"x\"],\"backend\":\"systemd\"",
		    BACKEND_SYSTEMD },
		{ "\"command\":null,\"image\":\"i\","
		    "\"backend\":\"kubernetes\"", BACKEND_KUBERNETES },
		{ "\"command\":[\"x\"],\"backend\":\"nomad\"", -1 },
		{ "\"command\":[\"x\"],\"backend\":1", -1 },
	};
	struct service_spec sp;
	char text[512], err[SPEC_ERR_LEN];
	size_t i;
	int rc;

	for (i = 0; i < nitems(cases); i++) {
		(void)snprintf(text, sizeof(text), "{\"name\":\"a\","
		    "\"port\":0,\"hosts\":[\"a.fn.localhost\"],%s}",
		    cases[i].fields);
		rc = spec_decode(text, &sp, err, sizeof(err));
		if (cases[i].want == -1)
			ok(rc == -1, "decode backend: %s: rejected",
			    cases[i].fields);
		else if (ok(rc == 0, "decode backend: %s: decodes",
		    cases[i].fields))
			is(config_backend_name(sp.backend),
			    config_backend_name(cases[i].want),
			    "decode backend: %s: its backend", cases[i].fields);
		else
			diag("%s", err);
		spec_clear(&sp);
	}
	ok(config_backend_available(BACKEND_EXEC) &&
	    config_backend_available(BACKEND_CONTAINER) &&
	    config_backend_available(BACKEND_S6) &&
	    config_backend_available(BACKEND_SYSTEMD) &&
	    config_backend_available(BACKEND_KUBERNETES),
	    "backends: this build has all five");
	ok(config_backend_find("exec") == BACKEND_EXEC &&
	    config_backend_find("docker") == -1,
	    "backends: found by name, unknown names are not");
}

static void
test_many(void)
{
	char text[8192], *p;
	struct server_config srv;
	struct app_config app;
	struct config_diag d;
	size_t i;
	int rc;

	/* 20 services, each missing image and with an unknown key */
	p = text + snprintf(text, sizeof(text), "%s", HEAD);
	for (i = 1; i <= 20; i++)
		p += snprintf(p, text + sizeof(text) - p,
		    "[services.s%zu]\nk = 1\n", i);
	srv_make(&srv, SRV_SL);
	memset(&d, 0, sizeof(d));
	rc = app_parse(&app, "app.toml", text, strlen(text), &srv, &d);
	ok(rc == -1 && d.count == 40, "many: all 40 counted");
	is(d.msg[0], "app.toml:3: services.s1: requires image or command",
	    "many: first in line order");
	is(d.msg[1], "app.toml:4: services.s1.k: unknown key",
	    "many: second in line order");
	is(d.msg[CONFIG_DIAG_MAX - 1], "app.toml:18: services.s8.k: "
	    "unknown key", "many: the 16 earliest kept");
	app_free(&app);
}

static void
test_examples(void)
{
	struct server_config srv;
	struct app_config app;
	struct config_diag d;
	const struct service_spec *s;
	const char *top;
	char path[PATH_MAX];
	int rc, missing;
	size_t i;

	if ((top = getenv("HK_TOP")) == NULL || *top == '\0')
		top = ".";
	(void)snprintf(path, sizeof(path), "%s/etc/examples/hakopod.toml",
	    top);
	memset(&d, 0, sizeof(d));
	rc = config_load_server(&srv, path, &d, &missing);
	if (!ok(rc == 0, "example hakopod.toml loads"))
		diag("%s", d.count ? d.msg[0] : "");
	is(srv.serverless_address, "127.0.0.1:8082",
	    "example hakopod.toml: serverless_address");

	(void)snprintf(path, sizeof(path),
	    "%s/etc/examples/http-functions.toml", top);
	memset(&d, 0, sizeof(d));
	rc = app_load(&app, path, &srv, &d, &missing);
	if (!ok(rc == 0, "example http-functions.toml loads"))
		for (i = 0; i < d.count && i < CONFIG_DIAG_MAX; i++)
			diag("%s", d.msg[i]);
	if (rc != 0) {
		unreached(4, "not loaded");
		return;
	}
	is(app.name, "http-functions", "example: name");
	isint(app_count_serverless(&app), 3, "example: three serverless");
	s = &app.services[0];
	ok(strcmp(s->name, "api") == 0 && s->image == NULL &&
	    s->command != NULL && s->port == 8080,
	    "example: api runs its command on exec");
	for (i = 0, rc = 0; i < app.nservices; i++)
		if (strstr(app.services[i].directory, "/etc/examples") == NULL)
			rc = -1;
	ok(rc == 0, "example: directory defaults to the file's directory");
	app_free(&app);
}

/* config_print: every key once, its source, and no password. */
static void
test_print(void)
{
	struct server_config cfg;
	struct config_diag diag;
	const struct config_key *keys;
	char *text = NULL, line[128];
	size_t len = 0, n, i;
	FILE *fp;
	int missing = 0;

	memset(&diag, 0, sizeof(diag));
	setenv("HAKOPOD_STATE", "postgres://hk:s3cret@db.example/hk", 1);
	ok(config_load_server(&cfg, NULL, &diag, &missing) == 0,
	    "print: defaults load");
	unsetenv("HAKOPOD_STATE");
	fp = open_memstream(&text, &len);
	config_print(fp, &cfg);
	fclose(fp);
	keys = config_keys(&n);
	for (i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "\n%s = ", keys[i].name);
		ok(strstr(text, line) != NULL || strncmp(text, line + 1,
		    strlen(line + 1)) == 0, "print: %s is shown", keys[i].name);
	}
	ok(strstr(text, "s3cret") == NULL &&
	    strstr(text, "state = \"postgres://hk:***@db.example/hk\" "
	    "(environment)\n") != NULL,
	    "print: the state URL's password is hidden, its source shown");
	ok(strstr(text, "max_concurrent_starts = 2 (default)\n") != NULL,
	    "print: an integer key with its source");
	free(text);
}

/*
 * Everything the tests wrote goes, whatever its name: a list of names
 * fell behind the tests once and left the directory in $TMPDIR.
 */
static void
cleanup(void)
{
	struct dirent *e;
	DIR *dir;
	char p[PATH_MAX];

	if ((dir = opendir(tmpdir)) != NULL) {
		while ((e = readdir(dir)) != NULL) {
			if (strcmp(e->d_name, ".") == 0 ||
			    strcmp(e->d_name, "..") == 0)
				continue;
			(void)snprintf(p, sizeof(p), "%s/%s", tmpdir,
			    e->d_name);
			(void)unlink(p);
		}
		(void)closedir(dir);
	}
	(void)rmdir(tmpdir);
	ok(access(tmpdir, F_OK) == -1 && errno == ENOENT,
	    "cleanup: the temporary directory %s is gone", tmpdir);
}

int
main(void)
{
	const char *t;

	clear_env();
	if ((t = getenv("TMPDIR")) == NULL || *t == '\0')
		t = "/tmp";
	(void)snprintf(tmpdir, sizeof(tmpdir), "%s/hk-config.XXXXXX", t);
	if (mkdtemp(tmpdir) == NULL) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}

	run_app_cases();
	run_srv_cases();
	test_defaults();
	test_retention();
	test_reload();
	test_nodes();
	test_missing();
	test_sizes();
	test_precedence();
	test_values();
	test_defaults_app();
	test_stability();
	test_spec_decode();
	test_spec_idle_check();
	test_many();
	test_examples();
	test_print();
	cleanup();
	/* make check shows stderr: the rule tests are seen to run */
	fprintf(stderr, "# config: %zu application and %zu operator rule cases "
	    "(exact messages), %d checks, %d failed\n", nitems(app_cases),
	    nitems(srv_cases), tap_run, tap_failed);
	return done();
}

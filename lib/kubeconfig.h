/*
 * kubeconfig.h - how hk reaches a Kubernetes API server: the credentials
 * of a kubeconfig file's context (the current one, or one named), or
 * those a pod's service account is given (in-cluster).  TLS is always
 * verified: a cluster marked insecure-skip-tls-verify is refused, and so
 * is a server that is not https.  Credentials that run a program (exec,
 * auth-provider) are refused too: hk-scale runs none of the operator's
 * programs as itself.
 */
#ifndef HK_KUBECONFIG_H
#define HK_KUBECONFIG_H

#include <stddef.h>

#define KUBE_SERVER_MAX		512
#define KUBE_NAMESPACE_MAX	63	/* a DNS label */
#define KUBE_FILE_MAX		(1024 * 1024)	/* bytes of a file read */
#define KUBE_ERR_LEN		(4096 + 256)

/* The default of in-cluster credentials (kube_incluster()). */
#define KUBE_SA_DIR		"/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_creds {
	char	 server[KUBE_SERVER_MAX + 1];	/* https://HOST[:PORT][/PATH],
						   no '/' at its end */
	char	 namespace_[KUBE_NAMESPACE_MAX + 1];	/* "default" if
						   none is said */
	char	*ca_pem;	/* the cluster's CA; NULL: the system's */
	char	*token;		/* a bearer token; NULL: none */
	char	*cert_pem;	/* a client certificate; NULL: none */
	char	*key_pem;	/* its key, secret; with cert_pem alone */
};

/*
 * Reads the kubeconfig text[0..len) into c: the context named, or the
 * current-context when context is NULL.  Paths in it are relative to dir
 * (the file's directory).  0, or -1 with err set.
 */
int	kubeconfig_parse(const char *, size_t, const char *, const char *,
	    struct kube_creds *, char *, size_t);
/*
 * The file at path, which must be its owner's alone (it holds
 * credentials), read as kubeconfig_parse() reads text.
 */
int	kubeconfig_load(const char *, const char *, struct kube_creds *,
	    char *, size_t);
/*
 * In-cluster: the server from KUBERNETES_SERVICE_HOST and
 * KUBERNETES_SERVICE_PORT, the token, CA and namespace from the files of
 * dir (KUBE_SA_DIR in a pod).  0, or -1 with err set.
 */
int	kube_incluster(const char *, struct kube_creds *, char *, size_t);
/* Frees what c holds, the key and token zeroed first. */
void	kube_creds_clear(struct kube_creds *);

#endif

/*
 * config_impl.h - private to lib/config*.c: what config.c shares with
 * config_vet.c ([vet]) and config_metrics.c ([metrics]) of hakopod.toml.
 * Nothing else includes it.
 */
#ifndef HK_CONFIG_IMPL_H
#define HK_CONFIG_IMPL_H

#include <stdio.h>

#include "config.h"
#include "cw.h"
#include "toml.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* config_vet.c: [vet] of hakopod.toml */
void	 config_vet_defaults(struct config_vet *);
int	 config_vet_walk(struct config_vet *, const struct toml_kv *,
	    const char *, struct config_diag *);
void	 config_vet_print(FILE *, const struct config_vet *);

/* config_metrics.c: [metrics] of hakopod.toml */
int	 config_metrics_walk(struct config_metrics *, const struct toml_kv *,
	    const char *, struct config_diag *);
int	 config_metrics_cross(const struct server_config *, const char *,
	    struct config_diag *);
void	 config_metrics_print(FILE *, const struct config_metrics *);
/* config.c: host:port as [server]'s addresses are checked */
int	 config_check_addr(const char *, char *, size_t);

#endif

/* The exit codes of the dlock command: the contract that scripts act on.
 * The man page (docs/dlock.1) and `dlock --help` show the same table. */
#ifndef DLOCK_EXIT_CODES_H
#define DLOCK_EXIT_CODES_H

enum cli_exit {
    EXIT_DONE = 0,         /* done; status: held */
    EXIT_REFUSED = 1,      /* release/extend refused: not the owner, or gone; status: free */
    EXIT_USAGE = 64,       /* usage error */
    EXIT_UNAVAILABLE = 69, /* Redis unreachable or timed out, no quorum, or it refused */
    EXIT_LOST = 70,        /* run: the lock was lost while the command ran */
    EXIT_BUSY = 75,        /* lock busy, or the wait ran out while it stayed busy */
    EXIT_PROTOCOL = 76,    /* the server's reply made no sense */
    EXIT_AUTH = 77,        /* authentication, ACL or TLS verification failure */
    EXIT_CANNOT_EXEC = 126, /* run: the command could not be executed */
    EXIT_NOT_FOUND = 127,  /* run: the command was not found */
};

#endif

// SPDX-License-Identifier: MIT
/*
 * prof/e2e/sigmask.c - a program that collects every signal itself, for
 * prof/e2e/sigmask_test.sh (issue 37 item 2, issue 30's "Signal masks"):
 *
 *	sigmask [drain|own|late]
 *
 * drain (the default): the main thread blocks every signal with
 * sigprocmask(), starts a thread that blocks every signal with
 * pthread_sigmask() and waits in sigwaitinfo(), then burns 0.5 s of CPU
 * in burn(), draining every pending signal with a signalfd and with
 * sigtimedwait() every millisecond or so.  It sends nothing to itself
 * until the end, when it sends the waiter SIGUSR1.  So any signal read,
 * any wait that returns early, and any mask that reads back other than
 * as set is a profiler's: it says so on stderr and exits 1.
 *
 * own: the program takes the highest real-time signal for itself: it
 * blocks that one signal, sends it to itself and waits for it with
 * sigtimedwait() (2 s at most): it must get its own (SI_USER from its
 * pid), and nothing else, else exit 1.
 *
 * late: the program blocks every signal, then installs a handler for the
 * highest real-time signal and sends it to itself: it must stay pending
 * until the program unblocks it, then be handled, else exit 1.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static int bad;
static volatile unsigned long sink;

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void __attribute__((noinline)) burn(void)
{
	for (int i = 0; i < 100000; i++)
		sink = sink * 31 + (unsigned long)i;
}

static void foreign(const char *how, int sig, int code)
{
	fprintf(stderr, "sigmask: %s read signal %d (code %d)\n", how, sig,
		code);
	bad = 1;
}

/* Every signal but SIGKILL and SIGSTOP reads back as blocked (@want). */
static void check_mask(const char *who, const sigset_t *m, int want)
{
	for (int sig = 1; sig <= SIGRTMAX; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP ||
		    (sig > 31 && sig < SIGRTMIN))
			continue;
		if (sigismember(m, sig) != want) {
			fprintf(stderr, "sigmask: %s: signal %d reads %s\n",
				who, sig, want ? "unblocked" : "blocked");
			bad = 1;
			return;
		}
	}
}

static void *waiter(void *arg)
{
	sigset_t all, cur;
	siginfo_t si;
	int sig;

	(void)arg;
	/* Inherited: everything blocked, as the main thread set it. */
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	check_mask("inherited mask", &cur, 1);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	for (;;) {
		sig = sigwaitinfo(&all, &si);
		if (sig == SIGUSR1 && si.si_pid == getpid())
			return NULL;
		if (sig < 0)
			fprintf(stderr, "sigmask: sigwaitinfo: %s\n",
				strerror(errno));
		else
			foreign("sigwaitinfo", sig, si.si_code);
		bad = 1;
	}
}

static void drain(int sfd)
{
	struct signalfd_siginfo fi;
	struct timespec zero = { 0, 0 };
	siginfo_t si;
	sigset_t all;
	int sig;

	while (read(sfd, &fi, sizeof(fi)) == sizeof(fi))
		foreign("signalfd", (int)fi.ssi_signo, fi.ssi_code);
	sigfillset(&all);
	while ((sig = sigtimedwait(&all, &si, &zero)) > 0)
		foreign("sigtimedwait", sig, si.si_code);
	if (errno != EAGAIN) {
		fprintf(stderr, "sigmask: sigtimedwait: %s\n", strerror(errno));
		bad = 1;
	}
}

static int run_drain(void)
{
	sigset_t all, old, cur;
	pthread_t t;
	double end;
	int sfd;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	check_mask("mask after SIG_BLOCK", &cur, 1);
	sfd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0 || pthread_create(&t, NULL, waiter, NULL)) {
		perror("sigmask: signalfd or pthread_create");
		return 1;
	}
	end = cpu_now() + 0.5;
	while (cpu_now() < end) {
		burn();
		drain(sfd);
	}
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	drain(sfd);
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	sigprocmask(SIG_BLOCK, NULL, &cur);
	check_mask("mask restored", &cur, 0);
	/* All but one: the highest real-time signal reads back blocked. */
	sigdelset(&all, SIGRTMIN);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pthread_sigmask(SIG_UNBLOCK, NULL, &cur);
	if (sigismember(&cur, SIGRTMAX) != 1 || sigismember(&cur, SIGRTMIN)) {
		fprintf(stderr, "sigmask: all but SIGRTMIN reads otherwise\n");
		bad = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("drained\n");
	return bad;
}

static int run_own(void)
{
	struct timespec two = { 2, 0 };
	sigset_t one;
	siginfo_t si;
	double end;
	int sig;

	sigemptyset(&one);
	sigaddset(&one, SIGRTMAX);
	sigprocmask(SIG_BLOCK, &one, NULL);
	end = cpu_now() + 0.1;
	while (cpu_now() < end)
		burn();
	kill(getpid(), SIGRTMAX);
	for (;;) {
		sig = sigtimedwait(&one, &si, &two);
		if (sig < 0) {
			fprintf(stderr, "sigmask: own signal: %s\n",
				strerror(errno));
			return 1;
		}
		if (si.si_code == SI_USER && si.si_pid == getpid())
			break;
		foreign("sigtimedwait (own)", sig, si.si_code);
	}
	printf("own\n");
	return bad;
}

static volatile sig_atomic_t handled;

static void on_rtmax(int sig)
{
	(void)sig;
	handled = 1;
}

/* Blocks every signal, then installs a handler for SIGRTMAX. */
static int run_late(void)
{
	struct sigaction sa = { .sa_handler = on_rtmax };
	sigset_t all, pending;
	double end;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	end = cpu_now() + 0.1;
	while (cpu_now() < end)
		burn();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMAX, &sa, NULL);
	kill(getpid(), SIGRTMAX);
	sigpending(&pending);
	if (handled || sigismember(&pending, SIGRTMAX) != 1) {
		fprintf(stderr, "sigmask: blocked SIGRTMAX was delivered\n");
		return 1;
	}
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	if (!handled) {
		fprintf(stderr, "sigmask: unblocked SIGRTMAX never came\n");
		return 1;
	}
	printf("late\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "own"))
		return run_own();
	if (argc > 1 && !strcmp(argv[1], "late"))
		return run_late();
	return run_drain();
}

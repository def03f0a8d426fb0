/*
 * One seed's randomness for the simulators (sim.c, sim_election.c): splitmix64, every choice of
 * a run drawn from rs, which the simulator sets to the seed. Included once by each simulator.
 */
#ifndef SIM_SEED_H
#define SIM_SEED_H

#include <stdint.h>

static uint64_t rs;
static uint64_t rnd(void)
{
	uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static int64_t uniform(int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static int chance(int percent)
{
	return (int)(rnd() % 100) < percent;
}

#endif

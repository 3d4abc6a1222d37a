#define XXH_INLINE_ALL
#include <xxhash.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xxh_x86dispatch.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){ size_t N=64<<20; unsigned char*d=malloc(N); for(size_t i=0;i<N;i++)d[i]=i*31+7;
 size_t sz[]={1028,2100,4096};
 for(int s=0;s<3;s++){ for(int m=0;m<2;m++){ double t=now(); unsigned long long acc=0; size_t tot=0;
  for(int r=0;r<20;r++) for(size_t o=0;o+sz[s]<=N;o+=sz[s]*2){ acc+= m? XXH3_64bits_dispatch(d+o,sz[s]) : XXH3_64bits(d+o,sz[s]); tot+=sz[s];}
  double dt=now()-t; printf("size %zu %s: %.1f GB/s (%llx)\n",sz[s],m?"dispatch":"inline  ",tot/dt/1e9,acc&0xff);}}
}

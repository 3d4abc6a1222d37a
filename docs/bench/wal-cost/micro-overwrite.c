#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t N=300000, rec=1040; static char buf[2048]; memset(buf,0x5a,sizeof buf);
  const char*path="/tmp/tkv_bench_walre"; unlink(path); int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  for(int pass=0;pass<3;pass++){ double t0=now(); size_t off=0;
    for(size_t i=0;i<N;i++){ if(pwrite(fd,buf,rec,off)!=(ssize_t)rec) return 1; off+=rec; }
    printf("pass %d pwrite: %.3f us/write\n",pass,(now()-t0)/N*1e6); }
  /* memcpy alone into malloc'd fresh memory */
  { double t0=now(); char*m=malloc(N*rec); for(size_t i=0;i<N;i++) memcpy(m+i*rec,buf,rec); printf("fresh malloc memcpy: %.3f us\n",(now()-t0)/N*1e6);
    t0=now(); for(size_t i=0;i<N;i++) memcpy(m+i*rec,buf,rec); printf("warm memcpy: %.3f us\n",(now()-t0)/N*1e6); free(m);}
  { double t0=now(); for(size_t i=0;i<N;i++) { if (pwrite(fd,buf,1,0)!=1) return 1;} printf("1-byte pwrite same page: %.3f us\n",(now()-t0)/N*1e6);}
  close(fd); unlink(path); return 0; }

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
  int mode=atoi(argv[1]); size_t L=256u<<20, C=256u<<10; static char z[256<<10];
  const char*path="/tmp/tkv_bench_pop"; unlink(path); int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  if (mode&4) fallocate(fd,0,0,L);
  ftruncate(fd,L);
  uint8_t*m=mmap(NULL,L,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);
  double t0=now();
  for(size_t o=0;o<L;o+=C){ if(mode&1) pwrite(fd,z,C,o); if(mode&2) madvise(m+o,C,23); }
  double t1=now();
  char buf[1040]; memset(buf,1,sizeof buf);
  for(size_t o=0;o+1040<=L;o+=1040) memcpy(m+o,buf,1040);
  double t2=now();
  printf("mode %d: prep %.2f us/page, memcpy %.3f us/1KiB write\n",mode,(t1-t0)/(L/4096)*1e6,(t2-t1)/(L/1040)*1e6);
  munmap(m,L); close(fd); unlink(path); }

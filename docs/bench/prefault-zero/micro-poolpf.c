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
  int mode=atoi(argv[1]); size_t piece=argc>2?strtoul(argv[2],0,0)<<10:256<<10;
  size_t L=256u<<20, C=2u<<20; static char z[2<<20];
  const char*path="/tmp/tkv_bench_poolpf"; unlink(path); int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  ftruncate(fd,1ull<<30);
  uint8_t*m=mmap(NULL,1ull<<30,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);
  madvise(m,1ull<<30,MADV_RANDOM);
  fallocate(fd,FALLOC_FL_KEEP_SIZE,0,L);
  double t0=now(), worst=0;
  for(size_t o=0;o<L;o+=C){ double a=now();
    if(mode==1) for(size_t p=0;p<C;p+=piece) pwrite(fd,z,piece,o+p);
    if(mode<=1) madvise(m+o,C,23);
    double d=now()-a; if(d>worst) worst=d; }
  double t1=now();
  char buf[4096]; memset(buf,1,sizeof buf);
  for(size_t o=0;o<L;o+=4096) memcpy(m+o,buf,4096);
  double t2=now();
  printf("mode %d piece %zuK: prep %.2f us/page (worst 2MiB chunk %.1f ms), stores %.2f us/page\n",mode,piece>>10,(t1-t0)/(L/4096)*1e6,worst*1e3,(t2-t1)/(L/4096)*1e6);
  munmap(m,1ull<<30); close(fd); unlink(path); }

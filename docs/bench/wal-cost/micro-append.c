#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t N=300000, rec=1040; char buf[2048]; memset(buf,0x5a,sizeof buf);
  size_t W = argc>2? strtoul(argv[2],0,0)<<10 : 1<<20;
  int mode=atoi(argv[1]);
  const char*path="/tmp/tkv_bench_walmap";
  unlink(path); int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  double t0=now(); size_t off=0;
  if(mode==0){ for(size_t i=0;i<N;i++){ if(pwrite(fd,buf,rec,off)!=(ssize_t)rec) return 1; off+=rec; } }
  else { uint8_t*map=NULL; size_t wbeg=0,wend=0;
    for(size_t i=0;i<N;i++){
      if(off+rec>wend){ if(map) munmap(map,wend-wbeg);
        wbeg=off&~(size_t)4095; wend=wbeg+W; 
        if(mode>=1){ if(ftruncate(fd,wend)) return 2; if(mode==3) fallocate(fd,0,wbeg,W);}
        map=mmap(NULL,W,PROT_READ|PROT_WRITE,MAP_SHARED,fd,wbeg); if(map==MAP_FAILED) return 3;
        if(mode>=2) madvise(map,W,MADV_POPULATE_WRITE);
      }
      memcpy(map+(off-wbeg),buf,rec); off+=rec; }
    munmap(map,wend-wbeg); ftruncate(fd,off);
  }
  double t=now()-t0; printf("mode %d W=%zuK: %.3f us/write\n",mode,W>>10,t/N*1e6);
  close(fd); unlink(path); return 0; }

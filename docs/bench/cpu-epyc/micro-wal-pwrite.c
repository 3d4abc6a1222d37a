#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  const char*path=argv[1]; int mode=atoi(argv[2]); size_t N=200000, rec=1052;
  unlink(path); int fd=open(path,O_CREAT|O_RDWR|O_TRUNC,0644);
  size_t total=N*rec+(1<<20);
  if(mode==1){ fallocate(fd,FALLOC_FL_KEEP_SIZE,0,total);}
  if(mode==2){ char*z=calloc(1,1<<20); for(size_t o=0;o<total;o+=1<<20) pwrite(fd,z,1<<20,o); }
  if(mode==3){ fallocate(fd,0,0,total); char*z=calloc(1,1<<20); for(size_t o=0;o<total;o+=1<<20) pwrite(fd,z,1<<20,o); }
  char buf[2048]; memset(buf,'x',sizeof buf);
  double t=now();
  for(size_t i=0;i<N;i++) pwrite(fd,buf,rec,i*rec);
  double dt=now()-t; printf("mode %d: %.3f us/pwrite\n",mode,dt/N*1e6);
  close(fd); unlink(path);
}

'use client'

import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { accessKeys } from '@/lib/shared/query-keys'
import type { ApiTokenDto, CreateTokenInput, CreateUserInput, UpdateUserInput, UserDto } from '@/lib/shared/schemas/user'
import { apiGet, apiSend } from './api'

export function useUsers(enabled: boolean) {
  return useQuery({ queryKey: accessKeys.users(), queryFn: ({ signal }) => apiGet<{ users: UserDto[] }>('/api/users', { signal }), enabled })
}

export function useCreateUser() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: Partial<CreateUserInput>) => apiSend<{ user: UserDto; setPasswordUrl: string }>('POST', '/api/users', input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.users() }),
  })
}

export function useUpdateUser() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: ({ id, input }: { id: string; input: UpdateUserInput }) => apiSend<UserDto>('PATCH', `/api/users/${encodeURIComponent(id)}`, input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.all }),
  })
}

export function useTokens() {
  return useQuery({ queryKey: accessKeys.tokens(), queryFn: ({ signal }) => apiGet<{ tokens: ApiTokenDto[] }>('/api/tokens', { signal }) })
}

export function useCreateToken() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (input: Partial<CreateTokenInput>) => apiSend<{ token: string; apiToken: ApiTokenDto }>('POST', '/api/tokens', input),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.tokens() }),
  })
}

export function useRevokeToken() {
  const client = useQueryClient()
  return useMutation({
    mutationFn: (id: string) => apiSend<ApiTokenDto>('DELETE', `/api/tokens/${encodeURIComponent(id)}`),
    onSuccess: () => void client.invalidateQueries({ queryKey: accessKeys.tokens() }),
  })
}
